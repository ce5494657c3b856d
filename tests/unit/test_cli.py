"""``hippo`` run in-process: every command against a real embedded store in a temp
dir, with the hashing embedder (no model to load)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hippocampus.api.cli import main
from hippocampus.config import HippoSettings
from hippocampus.demo import DEMO_MEMORIES, DEMO_QUERIES
from hippocampus.model import Edge, EdgeType
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

Run = tuple[int, str, str]
Runner = Callable[..., Run]


@pytest.fixture(autouse=True)
def _no_hippo_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # The CLI reads HIPPO_* like the server does; a developer's shell must not leak in.
    for name in list(os.environ):
        if name.upper().startswith("HIPPO_"):
            monkeypatch.delenv(name)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Runner:
    """Runs ``hippo`` in-process; gives (exit code, stdout, stderr)."""

    def _run(*argv: str) -> Run:
        code = main([*argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return _run


def _cli(run: Runner, data: Path, *argv: str) -> Run:
    return run(*argv, "--data-dir", str(data), "--embedder", "hashing")


def _open(data: Path) -> Hippocampus:
    return Hippocampus.from_settings(HippoSettings(data_dir=data, embedder="hashing"))


def test_remember_prints_the_id_and_recall_finds_the_memory(run: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    code, out, _ = _cli(
        run,
        data,
        "remember",
        "The nightly export job timed out because the Postgres connection pool was exhausted",
        "--collection",
        "team",
        "--category",
        "bug_fix",
        "--tag",
        "postgres",
        "--tag",
        "exports",
        "--id",
        "fix-1",
    )
    assert code == 0
    assert out.splitlines() == ["fix-1"]
    _cli(run, data, "remember", "Lunch is at noon on Fridays", "-c", "team")

    code, out, _ = _cli(run, data, "recall", "connection pool exhausted", "-c", "team")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["#", "score", "id", "category", "content"]
    assert lines[1].split()[2:4] == ["fix-1", "bug_fix"]

    code, out, _ = _cli(run, data, "recall", "connection pool", "-c", "team", "--json", "-n", "1")
    assert code == 0
    result = json.loads(out)
    # The API's shape: `results`, compact by default, full with --full.
    assert [h["id"] for h in result["results"]] == ["fix-1"]
    assert result["results"][0]["memory"]["tags"] == ["postgres", "exports"]
    assert "retrieval" not in result["results"][0]["memory"]
    assert "embedding" not in result["results"][0]["memory"]
    code, out, _ = _cli(
        run, data, "recall", "connection pool", "-c", "team", "--json", "--full", "-n", "1"
    )
    full = json.loads(out)["results"][0]["memory"]
    assert full["id"] == "fix-1" and "retrieval" in full


def test_remember_reads_stdin_and_reports_a_duplicate(
    run: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    text = "Feature flags get an owner and an expiry date when they are created"
    monkeypatch.setattr("sys.stdin", io.StringIO(text + "\n"))
    code, out, _ = _cli(run, data, "remember", "-")
    assert code == 0
    first = out.strip()

    code, out, _ = _cli(run, data, "remember", text)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == first
    assert f"duplicate_of: {first}" in lines
    assert any(line.startswith("reason: ") for line in lines)

    code, out, _ = _cli(run, data, "remember", text, "--json")
    assert json.loads(out)["duplicate_of"] == first


def test_stats_counts_memories_by_category(run: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    _cli(
        run, data, "remember", "Retry with exponential backoff and jitter", "--category", "pattern"
    )
    _cli(run, data, "remember", "Store money as integer cents", "--category", "decision")
    code, out, _ = _cli(run, data, "stats", "--json")
    assert code == 0
    stats = json.loads(out)
    assert stats["memories"] == 2
    assert stats["by_category"] == {"decision": 1, "pattern": 1}
    assert stats["embedder"].startswith("hashing")

    code, out, _ = _cli(run, data, "stats")
    assert code == 0
    assert "category: pattern" in out
    assert "memories" in out


def test_export_then_import_into_an_empty_data_dir_restores_an_identical_collection(
    run: Runner, tmp_path: Path
) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    assert _cli(run, source, "demo", "--collection", "kb")[0] == 0
    # Learned edges (weights, counters, kind) must survive the round trip too.
    service = _open(source)
    try:
        service.store.upsert_edges(
            "kb",
            [
                Edge(
                    source="demo-retry-jitter",
                    type=EdgeType.ASSOCIATED,
                    target="demo-timeout-budget",
                    weight=0.7,
                    co_occurrences=4,
                    kind="co_retrieval",
                ),
                Edge(
                    source="demo-webhook-duplicates",
                    type=EdgeType.ABOUT,
                    target="idempotency",
                    weight=0.9,
                    co_occurrences=2,
                ),
            ],
        )
    finally:
        service.close()

    backup = tmp_path / "kb.jsonl"
    code, _, err = _cli(run, source, "export", "--collection", "kb", "--out", str(backup))
    assert code == 0
    assert f"exported {len(DEMO_MEMORIES)} memories" in err
    code, stdout_copy, _ = _cli(run, source, "export", "--collection", "kb")
    assert code == 0
    assert stdout_copy == backup.read_text(encoding="utf-8")
    assert all(json.loads(line) for line in stdout_copy.splitlines())

    code, out, _ = _cli(run, target, "import", str(backup), "--collection", "kb")
    assert code == 0
    assert f"imported {len(DEMO_MEMORIES)} memories" in out

    before, after = _open(source), None
    try:
        after = _open(target)
        old = {m.id: m for m in before.store.iter_memories("kb")}
        new = {m.id: m for m in after.store.iter_memories("kb")}
        assert len(old) == len(DEMO_MEMORIES)
        assert {i: m.model_dump() for i, m in new.items()} == {
            i: m.model_dump() for i, m in old.items()
        }
        old_vectors = before.store.get_vectors("kb", list(old))
        new_vectors = after.store.get_vectors("kb", list(old))
        assert old_vectors.keys() == new_vectors.keys() == old.keys()
        for memory_id, vector in old_vectors.items():
            assert new_vectors[memory_id].tobytes() == vector.tobytes()
        for memory_id in old:
            assert after.store.edges_of("kb", memory_id) == before.store.edges_of("kb", memory_id)
        # The event log (the demo's recalls, which retrieval_count counts) is not
        # part of an export.
        log = {"events", "events_retained", "retrieval_count"}
        assert after.stats("kb").model_dump(exclude=log) == before.stats("kb").model_dump(
            exclude=log
        )
    finally:
        before.close()
        if after is not None:
            after.close()

    # Without --collection, the import goes where the file's header says it came from.
    elsewhere = tmp_path / "elsewhere"
    code, out, _ = _cli(run, elsewhere, "import", str(backup))
    assert code == 0
    assert f"imported {len(DEMO_MEMORIES)} memories" in out and "into kb " in out
    assert "no vector" not in out

    # Importing again adds nothing: every id is already there.
    code, out, _ = _cli(run, target, "import", str(backup), "--collection", "kb")
    assert code == 0
    assert f"({len(DEMO_MEMORIES)} already present)" in out


def test_reindex_embeds_memories_imported_without_vectors(run: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    _cli(run, data, "remember", "Canary deploys route 5% of traffic to the new version")
    _cli(run, data, "remember", "Page on symptoms users feel, not on causes")
    code, out, _ = _cli(run, data, "export")
    stripped = [json.loads(line) for line in out.splitlines()]
    for record in stripped:
        if record["type"] == "memory":
            record["vector"] = None
    backup = tmp_path / "no-vectors.jsonl"
    backup.write_text("".join(json.dumps(r) + "\n" for r in stripped), encoding="utf-8")

    restored = tmp_path / "restored"
    code, out, _ = _cli(run, restored, "import", str(backup))
    assert code == 0
    assert "2 memories of default have no vector" in out and "hippo reindex" in out
    assert json.loads(_cli(run, restored, "stats", "--json")[1])["pending_embeddings"] == 2

    code, out, err = _cli(run, restored, "reindex")
    assert code == 0
    assert "wait for a vector from hashing" in err
    assert "re-embedded 2 memories" in out
    assert json.loads(_cli(run, restored, "stats", "--json")[1])["pending_embeddings"] == 0
    assert _cli(run, restored, "reindex")[1].startswith("re-embedded 0 memories")


def test_demo_loads_memories_and_answers_its_questions(run: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    code, out, _ = _cli(run, data, "demo")
    assert code == 0
    assert f"loaded {len(DEMO_MEMORIES)} demo memories into demo" in out
    for query in DEMO_QUERIES:
        assert f"? {query}" in out
    assert "demo-webhook-duplicates" in out

    # A second run stores nothing new.
    code, out, _ = _cli(run, data, "demo")
    assert code == 0
    assert f"loaded 0 demo memories into demo ({len(DEMO_MEMORIES)} were already there)" in out


@pytest.mark.parametrize(
    "argv",
    [
        ("recall", "   "),
        ("recall", "anything", "--limit", "0"),
        ("remember", "valid text", "--category", "Not A Category"),
        ("remember", "valid text", "--importance", "3"),
        ("remember", "valid text", "--collection", "no spaces allowed"),
        ("stats", "--collection", "/etc"),
    ],
)
def test_bad_input_prints_an_error_and_exits_1(
    run: Runner, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    code, out, err = _cli(run, tmp_path / "data", *argv)
    assert code == 1
    assert err.startswith("error: ")
    assert "Traceback" not in err
    assert out == ""


def test_import_of_a_file_that_is_not_an_export_fails_cleanly(run: Runner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "header", "format": "hippocampus-jsonl/1"}\nnot json\n')
    code, _, err = _cli(run, tmp_path / "data", "import", str(bad))
    assert code == 1
    assert "line 2" in err

    code, _, err = _cli(run, tmp_path / "data", "import", str(tmp_path / "missing.jsonl"))
    assert code == 1
    assert err.startswith("error: cannot read")


def test_usage_errors_exit_2(run: Runner) -> None:
    code, _, err = run("no-such-command")
    assert code == 2
    assert "error:" in err
    code, _, _ = run("recall")
    assert code == 2
    code, out, _ = run("--help")
    assert code == 0
    assert "serve" in out


def test_help_loads_none_of_the_engine() -> None:
    # Each command imports what it needs when it runs: asking for help (or a
    # usage error) never pays for the web framework, the stores or the model.
    probe = (
        "import sys\n"
        "from hippocampus.api.cli import main\n"
        "assert main(['--help']) == 0\n"
        "assert main(['recall', '--help']) == 0\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    loaded = set(done.stdout.splitlines()[-1].split())
    heavy = {
        "torch", "sentence_transformers", "spacy", "fastapi", "uvicorn", "neo4j",
        "sqlite3", "scipy", "networkx", "hippocampus.service", "hippocampus.store",
        "hippocampus.api.app", "hippocampus.api.schemas",
    }  # fmt: skip
    assert loaded & heavy == set()
    assert "hippocampus.api.cli.memories" in loaded


def test_serve_refuses_a_public_host_without_api_keys(run: Runner, tmp_path: Path) -> None:
    code, _, err = _cli(run, tmp_path / "data", "serve", "--host", "0.0.0.0", "--port", "1")
    assert code == 2
    assert "refusing to serve on 0.0.0.0" in err
    assert "HIPPO_API_KEYS" in err
    # Nothing was opened: the refusal comes before the store.
    assert not (tmp_path / "data").exists()


def test_a_data_dir_held_by_another_store_is_reported_as_in_use(
    run: Runner, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    holder = EmbeddedStore(data)
    try:
        code, _, err = _cli(run, data, "stats")
    finally:
        holder.close()
    assert code == 1
    assert err.startswith("error: ")
    assert "stop the server first" in err
    assert _cli(run, data, "stats")[0] == 0


def test_a_memory_the_gate_rejects_exits_1_with_its_reasons(run: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    code, out, err = _cli(run, data, "remember", "fixed the thing, works now", "-c", "team")
    assert code == 1 and out == ""
    assert err.splitlines()[0].startswith("error: not stored (quality 0.")
    assert "reason: rejected by the quality gate" in err
    code, out, _ = _cli(run, data, "remember", "fixed it", "-c", "team", "--json")
    assert code == 1 and json.loads(out)["rejected"] is True
    code, out, _ = _cli(run, data, "stats", "-c", "team")
    assert "quality model" in out and "never (prior)" in out


def test_tiers_applies_the_policy_and_reports(run: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    _cli(run, data, "remember", "Payment gateway timeouts during checkout", "-c", "team")
    code, out, _ = _cli(run, data, "tiers", "-c", "team")
    assert code == 0
    assert out.splitlines() == [
        "tier pass on team: 1 examined, 0 archived, 0 quarantined, 0 restored"
    ]
    code, out, _ = _cli(run, data, "tiers", "-c", "team", "--json")
    assert code == 0 and json.loads(out)["examined"] == 1


# -- setup and migrate ------------------------------------------------------------


def test_setup_has_nothing_to_do_for_the_embedded_store(run: Runner, tmp_path: Path) -> None:
    code, out, _ = _cli(run, tmp_path / "data", "setup")
    assert code == 0
    assert "needs no setup" in out


def test_setup_reports_a_neo4j_it_cannot_reach(
    run: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # serve writes the workers' settings into the environment: a copy, restored after.
    monkeypatch.setattr(os, "environ", dict(os.environ))
    monkeypatch.setenv("HIPPO_STORE", "neo4j")
    monkeypatch.setenv("HIPPO_EMBEDDER", "minilm")
    monkeypatch.setenv("HIPPO_NEO4J__URI", "bolt://127.0.0.1:1")
    monkeypatch.setenv("HIPPO_NEO4J__MAX_RETRY_S", "0")
    code, _, err = _cli(run, tmp_path / "data", "setup")
    assert code == 1
    assert err.startswith("error: ") and "Neo4j is unavailable" in err
    assert "Traceback" not in err


def test_migrate_copies_a_collection_with_everything_it_holds(run: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    for text in (
        "The nightly export job timed out: the Postgres connection pool was exhausted",
        "Raise the pool size before the export window",
    ):
        assert _cli(run, data, "remember", text, "-c", "team")[0] == 0
    _cli(run, data, "recall", "connection pool exhausted", "-c", "team")
    code, out, _ = _cli(
        run,
        data,
        "migrate",
        "--from",
        "embedded",
        "--to",
        "embedded",
        "-c",
        "team",
        "--into",
        "copy",
    )
    assert code == 0, out
    assert "copied team from embedded to embedded as copy: 2 memories (2 with vectors)" in out

    service = _open(data)
    try:
        store = service.store
        originals = {m.id: m for m in store.iter_memories("team")}
        copies = {
            m.id: m.model_copy(update={"collection": "team"}) for m in store.iter_memories("copy")
        }
        assert copies == originals
        assert sorted(map(str, store.iter_edges("copy"))) == sorted(
            map(str, store.iter_edges("team"))
        )
        events = list(store.iter_events("team"))
        assert events and list(store.iter_events("copy")) == events
    finally:
        service.close()

    # Into a collection that already holds memories: refused, nothing written.
    code, _, err = _cli(
        run,
        data,
        "migrate",
        "--from",
        "embedded",
        "--to",
        "embedded",
        "-c",
        "team",
        "--into",
        "copy",
    )
    assert code == 1 and "already holds memories" in err


def test_migrate_carries_the_learned_quality_model(run: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    text = "The nightly export job timed out: the Postgres connection pool was exhausted"
    assert _cli(run, data, "remember", text, "-c", "team")[0] == 0
    service = _open(data)
    try:
        service.retrain_quality("team")
        model = service.quality_model("team")
        assert model.last_training is not None
    finally:
        service.close()
    code, out, _ = _cli(
        run,
        data,
        "migrate",
        "--from",
        "embedded",
        "--to",
        "embedded",
        "-c",
        "team",
        "--into",
        "copy",
    )
    assert code == 0, out
    # The quality model, and the count of memories with feedback it was trained on.
    assert out.rstrip().endswith("2 learned state documents")
    service = _open(data)
    try:
        assert service.quality_model("copy") == model
    finally:
        service.close()


def test_migrate_carries_conversations_and_what_surfacing_learned(
    run: Runner, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    text = "Redis connection pool exhausted at checkout: raise the pool size and a wait timeout"
    assert _cli(run, data, "remember", text, "-c", "team", "--source", "x")[0] == 0
    service = _open(data)
    try:
        service.message("team", "chat-1", "checkout fails, the redis connection pool is exhausted")
        state = service.conversation("team", "chat-1")
        metrics = service.surfacing_metrics("team")
        keys = service.portable_state_keys("team")
    finally:
        service.close()
    assert {"surface:model", "surface:counters", "conversation:chat-1"} <= set(keys)
    code, out, _ = _cli(
        run, data, "migrate", "--from", "embedded", "--to", "embedded", "-c", "team", "--into", "b"
    )
    assert code == 0, out
    service = _open(data)
    try:
        assert service.conversation("b", "chat-1") == state
        assert service.surfacing_metrics("b") == metrics
        assert service.portable_state_keys("b") == keys
    finally:
        service.close()


def test_migrate_refuses_to_copy_a_collection_onto_itself(run: Runner, tmp_path: Path) -> None:
    code, _, err = _cli(
        run, tmp_path / "data", "migrate", "--from", "embedded", "--to", "embedded", "-c", "team"
    )
    assert code == 2
    assert "onto itself" in err


def _turn_edges(service: Hippocampus, collection: str) -> list[tuple[str, str]]:
    return sorted(
        (e.source, e.target)
        for e in service.store.iter_edges(collection)
        if e.type is EdgeType.NEXT
    )


def test_remember_takes_time_speaker_and_conversation_and_export_carries_them(
    run: Runner, tmp_path: Path
) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    turns = [
        (
            "late",
            "2024-05-01T10:05:00Z",
            "bob",
            "Bob: the retry storm stopped once we added jitter",
        ),
        ("early", "2024-05-01T10:00:00+01:00", "ada", "Ada: the payment retries all fire at once"),
        ("middle", "2024-05-01T10:02:00Z", "ada", "Ada: add random jitter to the retry backoff"),
    ]
    for memory_id, at, who, text in turns:
        code, _, err = _cli(
            run,
            source,
            "remember",
            text,
            "-c",
            "chat",
            "--id",
            memory_id,
            "--conversation",
            "incident-7",
            "--occurred-at",
            at,
            "--speaker",
            who,
        )
        assert code == 0, err
    code, out, _ = _cli(run, source, "recall", "retry jitter", "-c", "chat", "--speaker", "bob")
    assert code == 0 and "late" in out and "middle" not in out
    code, out, _ = _cli(
        run,
        source,
        "recall",
        "retry jitter",
        "-c",
        "chat",
        "--occurred-before",
        "2024-05-01T10:02:00Z",
    )
    assert code == 0 and "early" in out and "middle" not in out and "late" not in out

    backup = tmp_path / "chat.jsonl"
    assert _cli(run, source, "export", "-c", "chat", "--out", str(backup))[0] == 0
    lines = [json.loads(line) for line in backup.read_text(encoding="utf-8").splitlines()]
    exported = {r["memory"]["id"]: r["memory"] for r in lines if r["type"] == "memory"}
    assert (exported["early"]["occurred_at"], exported["early"]["speaker"]) == (
        "2024-05-01T09:00:00Z",
        "ada",
    )
    assert _cli(run, target, "import", str(backup), "-c", "chat")[0] == 0

    before, after = _open(source), _open(target)
    try:
        old = {m.id: m for m in before.store.iter_memories("chat")}
        new = {m.id: m for m in after.store.iter_memories("chat")}
        assert new == old
        assert _turn_edges(before, "chat") == [("early", "middle"), ("middle", "late")]
        assert _turn_edges(after, "chat") == _turn_edges(before, "chat")
    finally:
        before.close()
        after.close()


def test_an_export_without_times_imports_with_the_creation_time_and_linked_turns(
    run: Runner, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    source = tmp_path / "source"
    for n, text in enumerate(
        (
            "The staging database ran out of disk during the nightly vacuum",
            "We moved the vacuum to Sunday and added a disk alert at 80 percent",
        )
    ):
        assert _cli(run, source, "remember", text, "-c", "ops", "--id", f"m{n}")[0] == 0
    backup = tmp_path / "ops.jsonl"
    assert _cli(run, source, "export", "-c", "ops", "--out", str(backup))[0] == 0
    # Rewrite it as an older Hippocampus wrote it: no time, no speaker, format 2;
    # both memories said in one conversation.
    old_lines = []
    for line in backup.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["type"] == "header":
            record["format"] = "hippocampus-jsonl/2"
        if record["type"] == "memory":
            del record["memory"]["occurred_at"], record["memory"]["speaker"]
            record["memory"]["retrieval"]["conversation_ids"] = ["night-shift"]
        old_lines.append(json.dumps(record))
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join(old_lines) + "\n", encoding="utf-8")

    code, _, err = _cli(run, data, "import", str(old), "-c", "ops")
    assert code == 0, err
    service = _open(data)
    try:
        memories = {m.id: m for m in service.store.iter_memories("ops")}
        for m in memories.values():
            assert m.occurred_at == m.created_at and m.speaker is None
        assert _turn_edges(service, "ops") == [("m0", "m1")]
    finally:
        service.close()


def test_a_time_without_an_offset_is_a_usage_error(run: Runner, tmp_path: Path) -> None:
    code, _, err = _cli(
        run, tmp_path / "d", "remember", "some text", "-c", "x", "--occurred-at", "2024-05-01T10:00"
    )
    assert code == 2 and "no UTC offset" in err
    code, _, err = _cli(
        run, tmp_path / "d", "recall", "q", "-c", "x", "--occurred-after", "last tuesday"
    )
    assert code == 2 and "not an ISO 8601 time" in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """``hippo serve`` on a data dir, in its own process: (the dir, its URL)."""
    data = tmp_path / "data"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPO_")}
    server = subprocess.Popen(
        [sys.executable, "-m", "hippocampus.api.cli", "serve", "--port", str(port),
         "--data-dir", str(data), "--embedder", "hashing"],
        cwd=Path(__file__).resolve().parents[2], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (data / "hippo.server.json").is_file():
            assert server.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        yield data, f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert not (data / "hippo.server.json").exists()


def test_recall_and_remember_talk_to_the_server_that_owns_the_data_dir(
    run: Runner, tmp_path: Path, served: tuple[Path, str]
) -> None:
    data, url = served
    # The server holds the data dir: these can only succeed by asking it.
    code, out, err = _cli(
        run, data, "remember", "Raise the pool size when the Redis pool is exhausted",
        "-c", "team", "--category", "bug_fix", "--id", "fix-1", "--source", "operator",
    )  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[0] == "fix-1"
    code, out, err = _cli(run, data, "recall", "redis pool", "-c", "team", "--json")
    assert code == 0, err
    body = json.loads(out)
    assert [h["id"] for h in body["results"]] == ["fix-1"]
    code, out, _ = _cli(run, data, "recall", "redis pool", "-c", "team")
    assert "fix-1" in out
    # A turn's time, speaker and conversation reach the server too.
    code, out, err = _cli(
        run, data, "remember", "Maya moved the Redis pool to the new cluster", "-c", "team",
        "--id", "turn-1", "--conversation", "chat-9", "--speaker", "Maya",
        "--occurred-at", "2024-05-01T14:03:00Z", "--json",
    )  # fmt: skip
    assert code == 0, err
    stored = json.loads(out)
    assert stored["speaker"] == "Maya" and stored["occurred_at"].startswith("2024-05-01T14:03")
    code, out, err = _cli(
        run, data, "recall", "redis pool", "-c", "team", "--speaker", "Maya", "--json",
        "--occurred-after", "2024-05-01T00:00:00Z", "--occurred-before", "2024-05-02T00:00:00Z",
    )  # fmt: skip
    assert code == 0, err
    assert [h["id"] for h in json.loads(out)["results"]] == ["turn-1"]
    # --url names a server explicitly, whatever the data dir.
    code, out, _ = _cli(
        run, tmp_path / "elsewhere", "recall", "redis pool", "-c", "team", "--url", url
    )
    assert code == 0 and "fix-1" in out
    # What needs the directory itself still refuses, saying why.
    backup = tmp_path / "none.jsonl"
    backup.write_text("", encoding="utf-8")
    code, _, err = _cli(run, data, "import", str(backup), "-c", "team")
    assert code == 1 and "import and migrate need the directory itself" in err


def test_url_that_answers_nothing_is_reported(run: Runner, tmp_path: Path) -> None:
    code, _, err = _cli(run, tmp_path / "x", "recall", "q", "--url", "http://127.0.0.1:9")
    assert code == 1 and "cannot reach the server" in err


def test_every_command_on_a_collection_talks_to_the_running_server(
    run: Runner, tmp_path: Path, served: tuple[Path, str]
) -> None:
    data, _ = served
    ids = []
    for text in ("Retry with exponential backoff and jitter", "Store money as integer cents"):
        code, out, err = _cli(run, data, "remember", text, "-c", "team", "--category", "pattern")
        assert code == 0, err
        ids.append(out.split()[0])
    code, out, err = _cli(run, data, "use", *ids, "-c", "team", "--context", "payments")
    assert code == 0, err
    assert out.strip().endswith("weight 0.30")
    code, out, err = _cli(run, data, "decay", "-c", "team")
    assert (code, out.strip()) == (0, "decay pass on team: 0 edges decayed"), err
    code, out, err = _cli(run, data, "tiers", "-c", "team")
    assert code == 0, err
    assert out.splitlines() == [
        "tier pass on team: 2 examined, 0 archived, 0 quarantined, 0 restored"
    ]
    assert json.loads(_cli(run, data, "tiers", "-c", "team", "--json")[1])["examined"] == 2
    code, out, err = _cli(run, data, "stats", "-c", "team", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["memories"] == 2 and stats["by_category"] == {"pattern": 2}
    code, out, _ = _cli(run, data, "stats", "-c", "team")
    assert code == 0 and "category: pattern" in out and "quality model" in out
    code, out, err = _cli(run, data, "reindex", "-c", "team")
    assert code == 0 and out.startswith("re-embedded 0 memories of team"), err
    backup = tmp_path / "team.jsonl"
    code, _, err = _cli(run, data, "export", "-c", "team", "--out", str(backup))
    assert code == 0, err
    edges = int(err.split("exported 2 memories and ")[1].split()[0])
    assert edges >= 1
    records = [json.loads(line) for line in backup.read_text(encoding="utf-8").splitlines()]
    assert records[0]["type"] == "header"
    assert sorted(r["memory"]["id"] for r in records if r["type"] == "memory") == sorted(ids)
    restored = tmp_path / "restored"
    code, out, err = _cli(run, restored, "import", str(backup))
    assert code == 0 and f"imported 2 memories and {edges} edges into team" in out, err
    code, out, err = _cli(run, data, "demo", "-n", "1")
    assert code == 0, err
    assert out.startswith(f"loaded {len(DEMO_MEMORIES)} demo memories into demo (0 were")
    assert out.count("\n? ") == len(DEMO_QUERIES)
    code, out, err = _cli(run, data, "export", "-c", "no such", "--out", str(backup))
    assert code == 1 and "answered 422" in err


def test_use_links_memories_used_together(run: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    _, a, _ = _cli(run, data, "remember", "Retry with exponential backoff and jitter")
    _, b, _ = _cli(run, data, "remember", "Store money as integer cents in the ledger")
    a, b = a.strip(), b.strip()
    for weight in ("0.30", "0.40"):
        code, out, err = _cli(run, data, "use", a, b, "--context", "payments")
        assert code == 0, err
        assert out.strip().endswith(f"weight {weight}")
    code, _, err = _cli(run, data, "use", a, a)
    assert code == 2 and "two different memories" in err
    code, _, err = _cli(run, data, "use", a, "no-such-memory")
    assert code == 1 and "no-such-memory" in err


def test_bench_lists_the_benchmarks_and_runs_one_with_its_options(run: Runner) -> None:
    code, out, _ = run("bench")
    assert code == 0
    names = {line.split()[0] for line in out.splitlines() if line and not line.startswith("run")}
    assert {"recall", "ingest", "quality", "simulate", "schedule"} <= names
    assert "synth" not in names  # a helper module, not a benchmark
    code, _, err = run("bench", "no-such-bench")
    assert code == 2 and "no-such-bench" in err
    # The benchmark runs as its own program and gets the options: --help is its
    # own (exit 0), an option it does not know is refused by it (exit 2).
    assert run("bench", "schedule", "--help")[0] == 0
    assert run("bench", "schedule", "--no-such-option")[0] == 2


def test_serve_refuses_workers_on_the_embedded_store(run: Runner, tmp_path: Path) -> None:
    code, _, err = _cli(run, tmp_path / "data", "serve", "--workers", "2", "--port", "1")
    assert code == 2
    assert "--workers 2 needs the Neo4j store" in err
    assert not (tmp_path / "data").exists()
    code, _, err = _cli(run, tmp_path / "data", "serve", "--workers", "0")
    assert code == 2
    assert "'0' is less than 1" in err


def test_serve_workers_on_neo4j_run_the_app_factory_in_each_worker(
    run: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    from hippocampus.api.cli import common

    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    opened: list[str] = []

    @contextlib.contextmanager
    def reach(settings: HippoSettings) -> Iterator[None]:
        opened.append(settings.store)
        yield None

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: calls.append((a, k)))
    monkeypatch.setattr(common, "engine", reach)
    # serve writes the workers' settings into the environment: a copy, restored after.
    monkeypatch.setattr(os, "environ", dict(os.environ))
    monkeypatch.setenv("HIPPO_STORE", "neo4j")
    monkeypatch.setenv("HIPPO_EMBEDDER", "minilm")
    code, out, _ = _cli(run, tmp_path / "data", "serve", "--workers", "3", "--port", "8123")
    assert code == 0
    assert opened == ["neo4j"]  # the store is reached once, before any worker starts
    assert calls == [
        (
            ("hippocampus.api.app:create_app",),
            {
                "factory": True,
                "host": "127.0.0.1",
                "port": 8123,
                "workers": 3,
                "log_level": logging.INFO,
            },
        )
    ]
    # Each worker builds its engine from HIPPO_*: the settings, flags included,
    # travel that way, whole.
    assert os.environ["HIPPO_EMBEDDER"] == "hashing"
    worker = HippoSettings()
    assert (worker.store, worker.embedder, worker.port) == ("neo4j", "hashing", 8123)
    assert "3 workers" in out
