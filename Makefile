.PHONY: up test lint format bench

up:      ## install and run the whole stack here (embedded Postgres/Redis, model simulator)
	scripts/install.sh && .venv/bin/leaflab up --model-sim

test:    ## install, start Postgres/Redis/Docker if needed, run the test suite
	scripts/test.sh

lint:    ## ruff + mypy
	scripts/lint.sh

format:
	.venv/bin/ruff format services tests bench && .venv/bin/ruff check --fix services tests bench

bench:   ## run the benchmarks (figures go in bench/RESULTS.md)
	.venv/bin/python -m bench.run_all
