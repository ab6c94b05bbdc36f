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


def check(path, context):
    problems = []
    args, stages, pipefail, release, stage = {}, [], False, None, None
    stage_release, stage_pipefail = {}, {}
    os_id, os_codename = debian_release()
    shellcheck = shutil.which("shellcheck")

    def problem(line, what):
        problems.append(f"{path}:{line}: {what}")

    for line, keyword, rest in instructions(path):
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
                if name not in ("debian",):
                    problem(line, f"base image {image}: build from Debian's images (debian:RELEASE)")
                if not tag or tag == "latest":
                    problem(line, f"base image {image}: pin a release tag, not latest")
                release, pipefail = (tag.split("-")[0] if tag else None), False
            stage = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            if stage:
                stages.append(stage)
        elif keyword == "SHELL":
            shell = json.loads(rest)
            pipefail = "pipefail" in shell
        elif keyword == "RUN":
            run = expand(rest, args)
            if re.search(r"(^|[;&|]\s*)apt\s", run):
                problem(line, "use apt-get, not apt (whose command line is not stable)")
            if re.search(r"\bsudo\b", run):
                problem(line, "no sudo: RUN steps run as root")
            if re.search(r"[^|]\|[^|]", run) and not pipefail:
                problem(line, 'a pipe without SHELL ["/bin/bash", "-o", "pipefail", "-c"] first')
            if "apt-get install" in run:
                before = run[: run.index("apt-get install")]
                if "apt-get update" not in before:
                    problem(line, "apt-get install without apt-get update before it in this RUN")
                for flag in ("-y", "--no-install-recommends"):
                    if not re.search(r"apt-get install[^&;]*\s" + re.escape(flag) + r"(\s|$)", run):
                        problem(line, f"apt-get install without {flag}")
                if "rm -rf /var/lib/apt/lists/*" not in run[run.rindex("apt-get install"):]:
                    problem(line, "remove /var/lib/apt/lists/* after apt-get install in this RUN")
                debian_here = (os_id == "debian" and release == os_codename
                               and shutil.which("apt-cache") is not None)
                for package in apt_packages(run):
                    if NVIDIA_PACKAGE.match(package) or not debian_here:
                        continue
                    if package not in apt_package_names():
                        problem(line, f"package {package} is not in Debian {os_codename}")
            if shellcheck:
                checked = subprocess.run([shellcheck, "-s", "bash", "-"], input=run,
                                         capture_output=True, text=True)
                if checked.returncode != 0:
                    problem(line, "shellcheck: " + " ".join(checked.stdout.split())[:300])
        elif keyword in ("COPY", "ADD"):
            words = shlex.split(rest)
            options = [w for w in words if w.startswith("--")]
            paths = [w for w in words if not w.startswith("--")]
            if keyword == "ADD" and any(re.match(r"https?://", p) for p in paths[:-1]):
                problem(line, "ADD of a URL: download in a RUN step with a checked tool")
            source_stage = next((o.split("=", 1)[1] for o in options if o.startswith("--from=")),
                                None)
            if source_stage is not None:
                if source_stage not in stages:
                    problem(line, f"COPY --from={source_stage}: no earlier stage of that name")
                continue
            for source in paths[:-1]:
                if not os.path.exists(os.path.join(context, source)):
                    problem(line, f"COPY {source}: not in the build context {context}")
        elif keyword in ("CMD", "ENTRYPOINT"):
            try:
                if not isinstance(json.loads(rest), list):
                    raise ValueError
            except ValueError:
                problem(line, f"{keyword} in shell form: write it as a JSON list (exec form)")
    if not stages and not any(k == "FROM" for _, k, _ in instructions(path)):
        problem(1, "no FROM")
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
