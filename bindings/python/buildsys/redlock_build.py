"""The PEP 517 build backend of the redlock-c Python package (in-tree:
pyproject.toml names it with backend-path, and requires nothing).

It writes wheels and sdists itself with zipfile and tarfile, so that
``pip install ./bindings/python`` works with any CPython >= 3.8, an isolated
build and no package index (no setuptools, no wheel).

Wheels:
  * ``bundle-dir=DIR`` (a config setting; scripts/package.sh passes it): DIR
    holds libredlock.so.0 (RUNPATH $ORIGIN) and the libhiredis and libuv it
    loads.  They go into the package directory, beside __init__.py, which
    loads that copy first.  The wheel is py3-none-manylinux_X_Y_ARCH (ctypes:
    no CPython ABI), X.Y being the newest GLIBC_ symbol version the libraries
    reference (objdump -T; what auditwheel computes), or, without objdump,
    the glibc of the machine that built them.
  * ``licenses-dir=DIR`` (scripts/package.sh passes it, made by
    packaging/bundle_notices.sh): the license notices of the bundled
    libhiredis and libuv, shipped as <dist-info>/licenses/LICENSES/* (the
    place PEP 639 gives license files).  From an sdist the same notices are
    made after the build, when the system is Debian's; else the wheel, built
    for this machine only, goes without them (a warning says so).
  * From an sdist (csrc/ holds the C sources): the same, the libraries built
    first with CMake (needs cmake, a C compiler, pkg-config and the hiredis
    and libuv development packages).
  * From the repository (bindings/python): pure Python, py3-none-any; the
    binding then loads the system's libredlock (or REDLOCK_LIBRARY).  Pass
    ``build-c=yes`` to build and bundle the C library as from an sdist.

The sdist (redlock_c-VERSION.tar.gz) carries the binding, this backend and,
under csrc/, the C library's sources (``c-tree=DIR``, default: the
repository's root, two levels up).

The version is the C project's (project(VERSION) in CMakeLists.txt): one
place for every artifact.
"""

import base64
import gzip
import hashlib
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

NAME = "redlock-c"
DIST = "redlock_c"  # the distribution's file-name form (PEP 427, PEP 625)
PACKAGE = "redlock_c"  # the import name
SUMMARY = "Redlock (distributed lock over N Redis masters) through libredlock, with asyncio"
CLASSIFIERS = (
    "Programming Language :: Python :: 3",
    "Framework :: AsyncIO",
    "Typing :: Typed",
    "License :: OSI Approved :: MIT License",
    "Operating System :: POSIX :: Linux",
)
# What the C library's build needs from its tree (the rest is tests, docs, tools).
C_TREE_PARTS = ("CMakeLists.txt", "LICENSE", "cmake", "include", "src", "packaging")
BUNDLED_PREFIXES = ("libredlock.so", "libhiredis", "libuv")

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)  # bindings/python, or the sdist's top directory


# ---- inputs ---------------------------------------------------------------------------------

def _setting(config_settings, key, default=None):
    value = (config_settings or {}).get(key, default)
    if isinstance(value, list):  # pip passes a repeated key as a list
        value = value[-1]
    return value


def _repo_c_tree():
    """The repository's root, when SOURCE is its bindings/python."""
    root = os.path.dirname(os.path.dirname(SOURCE))
    if os.path.isdir(os.path.join(root, "src")) and \
            os.path.isfile(os.path.join(root, "CMakeLists.txt")):
        return root
    return None


def _c_tree(config_settings=None):
    """The C sources: the c-tree setting, the sdist's csrc/, the repository."""
    given = _setting(config_settings, "c-tree")
    if given:
        return os.path.abspath(given)
    csrc = os.path.join(SOURCE, "csrc")
    if os.path.isfile(os.path.join(csrc, "CMakeLists.txt")):
        return csrc
    return _repo_c_tree()


def _version(config_settings=None):
    pkg_info = os.path.join(SOURCE, "PKG-INFO")
    if os.path.isfile(pkg_info):
        with open(pkg_info, encoding="utf-8") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    tree = _c_tree(config_settings)
    if tree is None:
        raise RuntimeError("no CMakeLists.txt to read the version from")
    with open(os.path.join(tree, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(\s*redlock\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not m:
        raise RuntimeError("no project(redlock VERSION ...) in CMakeLists.txt")
    return m.group(1)


def _metadata(version):
    with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + version,
             "Summary: " + SUMMARY, "License: MIT", "Requires-Python: >=3.8"]
    lines += ["Classifier: " + c for c in CLASSIFIERS]
    lines += ["Description-Content-Type: text/markdown", "", readme]
    return "\n".join(lines)


def _package_files():
    """(path in the wheel, path on disk) of the Python package."""
    pkg = os.path.join(SOURCE, PACKAGE)
    out = []
    for name in sorted(os.listdir(pkg)):
        if name.endswith((".py", ".pyi")) or name == "py.typed":
            out.append((PACKAGE + "/" + name, os.path.join(pkg, name)))
    return out


# ---- the bundled C library ---------------------------------------------------------------------

def _run(cmd, log):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    log.append("$ " + " ".join(cmd) + "\n" + proc.stdout)
    if proc.returncode != 0:
        raise RuntimeError("command failed: %s\n%s" % (" ".join(cmd), proc.stdout))
    return proc.stdout


def _build_c(tree, work):
    """Builds libredlock (Release, RUNPATH $ORIGIN) from tree and copies it
    with the libhiredis and libuv it loads (as ldd resolves them) into
    work/bundle, as scripts/package.sh's bundle_libs does."""
    for tool in ("cmake", "ldd"):
        if shutil.which(tool) is None:
            raise RuntimeError("building libredlock needs %s (and a C compiler, pkg-config, "
                               "libhiredis-dev, libuv1-dev)" % tool)
    build = os.path.join(work, "build")
    log = []
    _run(["cmake", "-S", tree, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
          "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON", "-DCMAKE_INSTALL_RPATH=$ORIGIN",
          "-DREDLOCK_WERROR=OFF", "-DREDLOCK_TLS=OFF", "-DREDLOCK_BUILD_TESTS=OFF",
          "-DREDLOCK_BUILD_EXAMPLES=OFF", "-DREDLOCK_BUILD_BENCH=OFF",
          "-DREDLOCK_BUILD_TOOLS=OFF"], log)
    _run(["cmake", "--build", build, "--target", "redlock", "-j2"], log)
    bundle = os.path.join(work, "bundle")
    os.makedirs(bundle)
    lib = os.path.join(bundle, "libredlock.so.0")
    shutil.copyfile(os.path.join(build, "libredlock.so.0"), lib)
    for line in _run(["ldd", lib], log).splitlines():
        m = re.match(r"\s*(lib(?:hiredis|uv)\S*) => (\S+)", line)
        if m:
            shutil.copyfile(m.group(2), os.path.join(bundle, m.group(1)))
    return bundle


def _bundle_notices(tree, bundle, work):
    """The bundled libraries' notices (packaging/bundle_notices.sh) for a
    wheel built from an sdist, or None, with a warning, when they cannot be
    had here."""
    script = os.path.join(tree, "packaging", "bundle_notices.sh")
    out = os.path.join(work, "LICENSES")
    if os.path.isfile(script) and shutil.which("bash"):
        proc = subprocess.run(["bash", script, bundle, out], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)
        if proc.returncode == 0:
            return out
        sys.stderr.write("redlock_build: warning: no license notices for the bundled "
                         "libraries: %s\n" % proc.stdout.strip())
    return None


def _license_files(licenses):
    if not licenses:
        return []
    names = sorted(os.listdir(licenses))
    if not names:
        raise RuntimeError("licenses-dir %s is empty" % licenses)
    return [(n, os.path.join(licenses, n)) for n in names]


def _bundled_files(bundle):
    names = sorted(n for n in os.listdir(bundle) if n.startswith(BUNDLED_PREFIXES))
    if "libredlock.so.0" not in names or not any(n.startswith("libhiredis") for n in names) \
            or not any(n.startswith("libuv") for n in names):
        raise RuntimeError("%s lacks libredlock.so.0, libhiredis or libuv: %s" % (bundle, names))
    return [(PACKAGE + "/" + n, os.path.join(bundle, n)) for n in names]


def _glibc_needed(paths):
    """The newest GLIBC_x.y symbol version the libraries reference, or None
    when objdump is not there."""
    if shutil.which("objdump") is None:
        return None
    newest = (2, 17)  # manylinux2014's floor: nothing older is claimed
    for path in paths:
        out = subprocess.run(["objdump", "-T", path], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
        for major, minor in re.findall(r"\bGLIBC_(\d+)\.(\d+)", out):
            newest = max(newest, (int(major), int(minor)))
    return newest


def _platform_tag(paths):
    arch = platform.machine()
    glibc = _glibc_needed(paths)
    if glibc is None:  # the glibc of the machine the libraries were built on
        name, ver = platform.libc_ver()
        if name != "glibc" or not ver:
            raise RuntimeError("cannot tell which glibc the bundled libraries need")
        glibc = tuple(int(x) for x in ver.split(".")[:2])
    return "manylinux_%d_%d_%s" % (glibc[0], glibc[1], arch)


# ---- archives ----------------------------------------------------------------------------------

def _epoch():
    return int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01: zip's floor


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def _write_wheel(directory, version, tag, files, extra=(), licenses=()):
    """files: (arcname, disk path); extra: (arcname, bytes); licenses: (name,
    disk path) of the bundled libraries' notices.  Returns the wheel's file
    name."""
    pure = tag == "py3-none-any"
    name = "%s-%s-%s.whl" % (DIST, version, tag)
    info = "%s-%s.dist-info" % (DIST, version)
    date = time.gmtime(_epoch())[:6]
    records = []

    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as zf:
        def add(arcname, data, mode=0o644):
            zi = zipfile.ZipInfo(arcname, date)
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
            records.append("%s,%s,%d" % (arcname, _record_hash(data), len(data)))

        for arcname, path in files:
            with open(path, "rb") as f:
                data = f.read()
            add(arcname, data, 0o755 if arcname.endswith((".so", ".so.0")) or ".so." in arcname
                else 0o644)
        for arcname, data in extra:
            add(arcname, data)
        add(info + "/METADATA", _metadata(version).encode("utf-8"))
        add(info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: redlock_build\n"
                              "Root-Is-Purelib: %s\nTag: %s\n"
                              % ("true" if pure else "false", tag)).encode("ascii"))
        add(info + "/top_level.txt", (PACKAGE + "\n").encode("ascii"))
        # pytest finds the fake_masters fixture (redlock_c.testing) by this entry point.
        add(info + "/entry_points.txt",
            ("[pytest11]\n%s = %s.pytest_plugin\n" % (PACKAGE, PACKAGE)).encode("ascii"))
        tree = _c_tree()
        lic = os.path.join(tree or SOURCE, "LICENSE")
        if os.path.isfile(lic):
            with open(lic, "rb") as f:
                add(info + "/LICENSE", f.read())
        for lname, path in licenses:
            with open(path, "rb") as f:
                add(info + "/licenses/LICENSES/" + lname, f.read())
        record = info + "/RECORD"
        text = "\n".join(records + [record + ",,"]) + "\n"
        zi = zipfile.ZipInfo(record, date)
        zi.external_attr = 0o100644 << 16
        zf.writestr(zi, text, zipfile.ZIP_DEFLATED)
    return name


# ---- PEP 517 / PEP 660 hooks -----------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version(config_settings)
    files = _package_files()
    bundle = _setting(config_settings, "bundle-dir")
    licenses = _setting(config_settings, "licenses-dir")
    build_c = _setting(config_settings, "build-c", "auto")
    sdist = os.path.isfile(os.path.join(SOURCE, "csrc", "CMakeLists.txt"))
    with tempfile.TemporaryDirectory(prefix="redlock-wheel-") as work:
        if not bundle and (build_c == "yes" or (build_c == "auto" and sdist)):
            tree = _c_tree(config_settings)
            if tree is None:
                raise RuntimeError("build-c=yes: no C sources (csrc/ or the repository)")
            bundle = _build_c(tree, work)
            licenses = _bundle_notices(tree, bundle, work)
        if bundle:
            libs = _bundled_files(os.path.abspath(bundle))
            tag = "py3-none-" + _platform_tag([p for _, p in libs])
            return _write_wheel(wheel_directory, version, tag, files + libs,
                                licenses=_license_files(licenses))
        return _write_wheel(wheel_directory, version, "py3-none-any", files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth puts this source directory on sys.path (the
    library: the system's or REDLOCK_LIBRARY)."""
    version = _version(config_settings)
    pth = (SOURCE + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, version, "py3-none-any", [],
                        extra=[("__editable__.%s.pth" % DIST, pth)])


def build_sdist(sdist_directory, config_settings=None):
    version = _version(config_settings)
    tree = _c_tree(config_settings)
    if tree is None:
        raise RuntimeError("the sdist carries the C sources: pass c-tree=DIR")
    top = "%s-%s" % (DIST, version)
    name = top + ".tar.gz"
    mtime = _epoch()

    def norm(ti):
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        ti.mtime = mtime
        ti.mode = 0o755 if ti.isdir() or ti.mode & 0o111 else 0o644
        if ti.name.endswith((".pyc",)) or "/__pycache__" in ti.name:
            return None
        return ti

    members = [("pyproject.toml", os.path.join(SOURCE, "pyproject.toml")),
               ("README.md", os.path.join(SOURCE, "README.md")),
               ("buildsys/redlock_build.py", os.path.join(HERE, "redlock_build.py"))]
    members += _package_files()
    for part in C_TREE_PARTS:
        path = os.path.join(tree, part)
        if os.path.exists(path):
            members.append(("csrc/" + part, path))
    if os.path.isfile(os.path.join(tree, "LICENSE")):
        members.append(("LICENSE", os.path.join(tree, "LICENSE")))
    raw = io.BytesIO()
    # gzip with mtime 0 and no name: the same bytes each time.
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:
            for arcname, path in sorted(members):
                tf.add(path, arcname=top + "/" + arcname, filter=norm)
            data = _metadata(version).encode("utf-8")
            ti = tarfile.TarInfo(top + "/PKG-INFO")
            ti.size, ti.mtime, ti.mode = len(data), mtime, 0o644
            tf.addfile(ti, io.BytesIO(data))
    with open(os.path.join(sdist_directory, name), "wb") as f:
        f.write(raw.getvalue())
    return name
