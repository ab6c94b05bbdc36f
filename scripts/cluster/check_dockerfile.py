#!/usr/bin/env python3
"""Lints a Dockerfile where no Dockerfile linter is packaged (Debian 12 has none): the rules
below, each a mistake that makes an image build fail, change from build to build or grow.

Usage: check_dockerfile.py DOCKERFILE CONTEXT_DIR [DOCKERFILE CONTEXT_DIR ...]

  FROM      every base image is Debian's, with a tag that is not `latest` (ARG defaults resolved)
  RUN       apt-get install: -y and --no-install-recommends, after apt-get update in the same RUN,
            and the package lists removed in it; no `apt` (its CLI is not stable), no sudo;
            a RUN with a pipe comes after SHELL [... "-o", "pipefail" ...]
  packages  every package of an apt-get install that is not NVIDIA's (cuda-*, libcublas*,
            libcudnn*, libnccl*) exists in this machine's Debian archive, when this machine runs
            the Debian release the Dockerfile builds on
  COPY      each source exists in the build context; --from names an earlier stage; no ADD of URLs
  CMD       CMD and ENTRYPOINT in exec (JSON) form
  shell     every RUN passes shellcheck (bash), when shellcheck is installed
Prints one line per problem as FILE:LINE: what, and a count per file; exits 1 when any file has a
problem.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

NVIDIA_PACKAGE = re.compile(r"^(cuda-|libcublas|libcudnn|libnccl|libcusparse|libcufft|libnvjitlink)")


def instructions(path):
    """(line number, KEYWORD, text) of each instruction, continuation lines joined."""
    result, pending, start = [], "", 0
    with open(path) as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if pending and line.lstrip().startswith("#"):
                continue
            if not pending:
                start = number
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            text = (pending + line).strip()
            pending = ""
            keyword, _, rest = text.partition(" ")
            result.append((start, keyword.upper(), rest.strip()))
    return result


def expand(text, args):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)),
                  text)


def apt_packages(run):
    """The package names of each `apt-get install` in a RUN command."""
    packages = []
    for command in re.split(r"&&|;|\|\|", run):
        words = shlex.split(command)
        if words[:2] == ["apt-get", "install"]:
            packages += [w for w in words[2:] if not w.startswith("-")]
    return packages


def debian_release():
    try:
        with open("/etc/os-release") as f:
            fields = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        return fields.get("ID", "").strip('"'), fields.get("VERSION_CODENAME", "").strip('"')
    except OSError:
        return "", ""


_package_names = None


def apt_package_names():
    """Every package name this machine's archive knows: one apt-cache call per run (it is slow
    where apt keeps no binary cache, as in containers)."""
    global _package_names
    if _package_names is None:
        listed = subprocess.run(["apt-cache", "pkgnames"], capture_output=True, text=True)
        _package_names = set(listed.stdout.split()) if listed.returncode == 0 else set()
    return _package_names


def run_problems(run, pipefail, debian_release):
    """What is wrong with one RUN command. `debian_release`: the release the stage builds on when
    this machine runs it too (its package names can then be checked), else None."""
    found = []
    if re.search(r"(^|[;&|]\s*)apt\s", run):
        found.append("use apt-get, not apt (whose command line is not stable)")
    if re.search(r"\bsudo\b", run):
        found.append("no sudo: RUN steps run as root")
    if re.search(r"[^|]\|[^|]", run) and not pipefail:
        found.append('a pipe without SHELL ["/bin/bash", "-o", "pipefail", "-c"] first')
    if "apt-get install" in run:
        if "apt-get update" not in run[: run.index("apt-get install")]:
            found.append("apt-get install without apt-get update before it in this RUN")
        for flag in ("-y", "--no-install-recommends"):
            if not re.search(r"apt-get install[^&;]*\s" + re.escape(flag) + r"(\s|$)", run):
                found.append(f"apt-get install without {flag}")
        if "rm -rf /var/lib/apt/lists/*" not in run[run.rindex("apt-get install"):]:
            found.append("remove /var/lib/apt/lists/* after apt-get install in this RUN")
        for package in apt_packages(run) if debian_release else []:
            if not NVIDIA_PACKAGE.match(package) and package not in apt_package_names():
                found.append(f"package {package} is not in Debian {debian_release}")
    shellcheck = shutil.which("shellcheck")
    if shellcheck:
        checked = subprocess.run([shellcheck, "-s", "bash", "-"], input=run, capture_output=True,
                                 text=True)
        if checked.returncode != 0:
            found.append("shellcheck: " + " ".join(checked.stdout.split())[:300])
    return found


def copy_problems(keyword, rest, stages, context):
    """What is wrong with one COPY or ADD."""
    found = []
    words = shlex.split(rest)
    options = [w for w in words if w.startswith("--")]
    paths = [w for w in words if not w.startswith("--")]
    if keyword == "ADD" and any(re.match(r"https?://", p) for p in paths[:-1]):
        found.append("ADD of a URL: download in a RUN step with a checked tool")
    source_stage = next((o.split("=", 1)[1] for o in options if o.startswith("--from=")), None)
    if source_stage is not None:
        if source_stage not in stages:
            found.append(f"COPY --from={source_stage}: no earlier stage of that name")
        return found
    for source in paths[:-1]:
        if not os.path.exists(os.path.join(context, source)):
            found.append(f"COPY {source}: not in the build context {context}")
    return found


def check(path, context):
    problems = []
    args, stages, pipefail, release, stage = {}, [], False, None, None
    stage_release, stage_pipefail = {}, {}
    os_id, os_codename = debian_release()
    apt_here = os_id == "debian" and shutil.which("apt-cache") is not None
    for line, keyword, rest in instructions(path):
        found = []
        if stage:
            stage_release[stage], stage_pipefail[stage] = release, pipefail
        if keyword == "ARG":
            name, _, default = rest.partition("=")
            if default or name not in args:
                args[name] = default or args.get(name, "")
        elif keyword == "FROM":
            words = rest.split()
            image = expand(words[0], args)
            if image in stages:  # an earlier stage: its base, release and shell carry over
                release, pipefail = stage_release[image], stage_pipefail[image]
            else:
                name, _, tag = image.partition(":")
                if name != "debian":
                    found.append(f"base image {image}: build from Debian's images (debian:RELEASE)")
                if not tag or tag == "latest":
                    found.append(f"base image {image}: pin a release tag, not latest")
                release, pipefail = (tag.split("-")[0] if tag else None), False
            stage = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            if stage:
                stages.append(stage)
        elif keyword == "SHELL":
            pipefail = "pipefail" in json.loads(rest)
        elif keyword == "RUN":
            same_release = apt_here and release == os_codename
            found = run_problems(expand(rest, args), pipefail, release if same_release else None)
        elif keyword in ("COPY", "ADD"):
            found = copy_problems(keyword, rest, stages, context)
        elif keyword in ("CMD", "ENTRYPOINT"):
            try:
                exec_form = isinstance(json.loads(rest), list)
            except ValueError:
                exec_form = False
            if not exec_form:
                found.append(f"{keyword} in shell form: write it as a JSON list (exec form)")
        problems += [f"{path}:{line}: {what}" for what in found]
    if not any(k == "FROM" for _, k, _ in instructions(path)):
        problems.append(f"{path}:1: no FROM")
    return problems


def main():
    pairs = sys.argv[1:]
    if not pairs or len(pairs) % 2:
        sys.exit(__doc__)
    failed = False
    for path, context in zip(pairs[::2], pairs[1::2]):
        problems = check(path, context)
        for p in problems:
            print(p)
        print(f"check_dockerfile.py: {path}: {len(problems)} problem(s)")
        failed = failed or bool(problems)
    if not shutil.which("shellcheck"):
        print("check_dockerfile.py: shellcheck not installed: RUN steps not shellchecked")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
