"""``python -m sparkload``: the ``sparkload`` command line."""

from sparkload.cli import main

raise SystemExit(main())
