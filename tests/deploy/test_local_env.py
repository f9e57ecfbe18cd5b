"""One reader of deploy/local.env (chatetl.settings.read_env_file) for the settings, the local
services and `make ui` / the demo (deploy/local_env.py): the real environment wins, an empty
variable counts as unset, and the command starts with the environment it needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chatetl.settings import local_environment, read_env_file

REPO = Path(__file__).resolve().parents[2]


def test_the_env_file_is_parsed_once_for_everyone(tmp_path):
    env_file = tmp_path / "local.env"
    env_file.write_text("# a comment\n\nexport A=1\nB = 'two words'\nC=\"x=y\"\nnot a setting\nD=\n")
    assert read_env_file(env_file) == {"A": "1", "B": "two words", "C": "x=y", "D": ""}
    assert read_env_file(tmp_path / "missing.env") == {}
    merged = local_environment({"A": "set", "B": "", "E": "e"}, defaults={"B": "default", "F": "f"}, env_file=env_file)
    assert merged == {"A": "set", "B": "default", "C": "x=y", "D": "", "E": "e", "F": "f"}


def test_local_services_read_the_same_file():
    sys.path.insert(0, str(REPO / "deploy"))
    import local_services

    assert local_services.read_env_file is read_env_file
    assert local_services.load_settings()["NEO4J_PASSWORD"] == read_env_file(REPO / "deploy" / "local.env")["NEO4J_PASSWORD"]


def test_local_env_runs_a_command_with_the_file_as_defaults():
    code = "import json, os; print(json.dumps({k: os.environ.get(k) for k in ('NEO4J_URI', 'AWS_ACCESS_KEY_ID', 'CHATETL_STORE')}))"
    env = {"PATH": "/usr/bin:/bin", "NEO4J_URI": "bolt://127.0.0.1:17687"}
    out = subprocess.run([sys.executable, str(REPO / "deploy" / "local_env.py"), "CHATETL_STORE=s3", "--", sys.executable, "-c", code],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen == {"NEO4J_URI": "bolt://127.0.0.1:17687", "AWS_ACCESS_KEY_ID": read_env_file(REPO / "deploy" / "local.env")["AWS_ACCESS_KEY_ID"],
                    "CHATETL_STORE": "s3"}


def test_make_ui_uses_it():
    recipe = subprocess.run(["make", "-n", "-s", "ui"], capture_output=True, text=True, cwd=REPO, timeout=60).stdout
    assert "deploy/local_env.py CHATETL_STORE=s3" in recipe and "dagster dev" in recipe and "sed" not in recipe
