.PHONY: up test lint format bench

# The model: `make up MODEL_URL=http://host:8000/v1 MODEL=name` (or LEAFLAB_LLM_BASE_URL /
# LEAFLAB_MODEL in the environment), `make up LOCAL_MODEL=1` (a small real model on this
# CPU), else the model simulator (simulated answers, labelled as such).
UP_MODEL_FLAGS = $(if $(MODEL_URL),--model-url '$(MODEL_URL)') $(if $(MODEL),--model '$(MODEL)') $(if $(LOCAL_MODEL),--local-model)

up:      ## install and run the whole stack here (embedded Postgres/Redis; MODEL_URL=, MODEL=, LOCAL_MODEL=1)
	scripts/install.sh
	$(if $(LOCAL_MODEL),scripts/ensure_real_model.sh)
	.venv/bin/leaflab up $(UP_MODEL_FLAGS)

test:    ## install, start Postgres/Redis/Docker if needed, run the test suite
	scripts/test.sh

lint:    ## ruff + mypy + import-linter, ESLint + tsc (browser code)
	scripts/lint.sh

format:
	.venv/bin/ruff format services tests bench && .venv/bin/ruff check --fix services tests bench

bench:   ## run the benchmarks (figures go in bench/RESULTS.md)
	.venv/bin/python -m bench.run_all
