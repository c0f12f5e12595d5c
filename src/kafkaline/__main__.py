"""``python -m kafkaline``: the same command line as the ``kafkaline`` console script."""

from kafkaline.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
