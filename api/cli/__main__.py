"""``python -m hippocampus.api.cli``: the same as ``hippo``."""

from hippocampus.api.cli import main

raise SystemExit(main())
