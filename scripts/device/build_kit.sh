#!/usr/bin/env bash
# Builds the GPU session kit: dl-train and the CUDA test programs, built here for the lent
# H100/H200 (sm_90 SASS + PTX), linked so that they run on the device machine without Debian's
# libraries, and the Fashion-MNIST files, in one folder that a `run` call carries (64 MiB per
# call, tree included). docs/DEVICE_SESSION.md says how a session uses it.
#
# Usage: scripts/device/build_kit.sh [--mpi] [--source DIR] [--build DIR] [--kit DIR] [--jobs N]
#   --mpi         build the MPI kit instead: dl-train with MPI (-Dmpi=enabled) and Debian's Open MPI
#                 runtime (mpirun, its libraries, the plugins that need nothing more, help texts),
#                 relocatable with OPAL_PREFIX; no data (it uses the main kit's). Defaults then:
#                 build-device-mpi, device-kit-mpi
#   --source DIR  the source tree to build (default: this checkout; e.g. a clean export of HEAD,
#                 `git archive HEAD | tar -x -C /tmp/kit-src`, while cuda/ is mid-edit)
#   --build DIR   the meson build folder (default: build-device in the source tree)
#   --kit DIR     the kit folder, replaced (default: device-kit in this checkout, git-ignored)
#   --jobs N      ninja jobs (default 2: the build machine has 2 cores)
#
# How each library is linked (checked at the end with readelf; see MANIFEST.txt in the kit):
#   yaml-cpp, zlib          static (-Dprefer_static=true finds libyaml-cpp.a, libz.a); the MPI
#                           kit links them (and the reference BLAS) dynamically and carries them
#   fmt, CLI11, Catch2      header-only / static test main
#   CBLAS                   the netlib reference CBLAS, static (-Dblas=reference): OpenBLAS
#                           linked statically is 27 MB per binary (its kernels for every CPU
#                           stay reachable through its dispatch table, so --gc-sections keeps
#                           them), and the shared library is 36 MB
#   CUDA runtime            static (libcudart_static.a, whole archive, so the libcudart.so that
#                           cuda/meson.build finds becomes unneeded and --as-needed drops it)
#   cuBLAS, cuBLASLt, cuDNN, NCCL   shared, from the device's pip packages (nvidia-*)
#   libstdc++, libgcc_s, glibc      the device's own (built against glibc 2.36, GCC 12)
# The CPU code is compiled for plain x86-64 (-Dnative_cpu=false): this machine's -march=native
# might use instructions the device's processor lacks. The CPU backend's own kernels are compiled
# for each x86-64 level too, and the widest the device's processor runs is taken at start-up.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

readonly kGpuArchitectures=90
readonly kMebibyte=$((1024 * 1024))
readonly kKitLimitMiB=60
readonly kDataSource=/usr/share/datasets/fashion-mnist
readonly kDataFiles=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz
  t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
# Programs the kit cannot do without; every other tests/cuda program is taken when it builds.
readonly kRequiredPrograms=(dl-train tests/cuda/test_cuda_backend)
# Libraries the device machine provides: glibc, the GCC runtime, the CUDA libraries.
readonly kSystemLibraries='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcudart|libcublas|libcublasLt|libcudnn|libnccl)\.so'

die() {
  echo "build_kit.sh: $*" >&2
  exit 1
}

# Libraries besides glibc and GCC's runtime that the Open MPI runtime may bring into lib/. A
# plugin that needs anything else (InfiniBand, UCX, libfabric, PSM, OpenCL) is left out: one
# process on one machine needs none of them.
readonly kOpenMpiLibraries='^(libmpi|libmpi_cxx|libopen-pal|libopen-rte|libhwloc|libevent_core-2\.1|libevent_pthreads-2\.1|libudev|libpmix|libmunge|libz|libmca_common_(sm|ompio|monitoring))\.so'

# needed_libraries FILE: "soname path" of each library FILE loads (ldd), "soname not-found" for
# the missing ones.
needed_libraries() {
  ldd "$1" 2>/dev/null | sed -n -e 's/^[[:space:]]*\([^ ]*\) => not found.*/\1 not-found/p' \
    -e 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) (.*/\1 \2/p'
}

# only_allowed_libraries FILE: whether FILE needs only system and Open MPI libraries.
only_allowed_libraries() {
  local soname path
  while read -r soname path; do
    [[ "$path" != not-found ]] || return 1
    [[ "$soname" =~ $kSystemLibraries || "$soname" =~ $kOpenMpiLibraries ]] || return 1
  done < <(needed_libraries "$1")
}

# Debian's Open MPI, laid out under the kit as under its prefix (/usr), so that OPAL_PREFIX=kit
# finds the plugins and help texts: bin/mpirun (orterun), bin/orted, lib/ (every library the
# programs and plugins need outside the system's: Open MPI's, yaml-cpp, the reference BLAS),
# lib/<multiarch>/openmpi/lib/openmpi3 (plugins), share/openmpi (help texts). sysconfdir
# (/etc/openmpi) does not follow OPAL_PREFIX; its defaults are not needed.
add_open_mpi_runtime() {
  local mpirun orted prefix pkglibdir pkgdatadir
  mpirun="$(readlink -f "$(command -v mpirun)")" || die "mpirun not found; install openmpi-bin"
  orted="$(dirname "$mpirun")/orted"
  ompi_path() { ompi_info --path "$1" | sed 's/^[^:]*: *//'; }
  prefix="$(ompi_path prefix)"
  pkglibdir="$(ompi_path pkglibdir)"
  pkgdatadir="$(ompi_path pkgdatadir)"
  [[ -d "$pkglibdir" && -d "$pkgdatadir" ]] || die "ompi_info: no plugin or help folder ($pkglibdir, $pkgdatadir)"
  cp -L "$mpirun" "$kit_dir/bin/mpirun"
  [[ -x "$orted" ]] && cp -L "$orted" "$kit_dir/bin/orted"
  local plugin_dir="$kit_dir/${pkglibdir#"$prefix"/}" plugin left_out=()
  mkdir -p "$plugin_dir" "$kit_dir/$(dirname "${pkgdatadir#"$prefix"/}")"
  for plugin in "$pkglibdir"/*.so; do
    if only_allowed_libraries "$plugin"; then
      cp -L "$plugin" "$plugin_dir/"
    else
      left_out+=("$(basename "$plugin" .so)")
    fi
  done
  cp -r "$pkgdatadir" "$kit_dir/${pkgdatadir#"$prefix"/}"
  local file soname path
  for file in "$kit_dir"/bin/* "$plugin_dir"/*.so; do
    while read -r soname path; do
      if [[ ! "$soname" =~ $kSystemLibraries && ! -f "$kit_dir/lib/$soname" ]]; then
        cp -L "$path" "$kit_dir/lib/$soname"
      fi
    done < <(needed_libraries "$file")
  done
  # PMIx (Open MPI's process manager interface) has its own plugins and help texts, found
  # through PMIX_PREFIX=kit/pmix.
  local pmix_root
  pmix_root="$(dirname "$(dirname "$(readlink -f "$(ldconfig -p | sed -n 's/.*libpmix\.so\.2 .* => //p' | head -n 1)")")")"
  if [[ -d "$pmix_root/lib/pmix" ]]; then
    mkdir -p "$kit_dir/pmix/lib/pmix"
    for plugin in "$pmix_root"/lib/pmix/*.so; do
      only_allowed_libraries "$plugin" && cp -L "$plugin" "$kit_dir/pmix/lib/pmix/"
    done
    [[ -d "$pmix_root/share" ]] && cp -r "$pmix_root/share" "$kit_dir/pmix/share"
  fi
  strip --strip-unneeded "$kit_dir"/lib/*.so* "$plugin_dir"/*.so "$kit_dir/bin/mpirun" 2>/dev/null || true
  echo "Open MPI $(ompi_info --version 2>/dev/null | head -n 1 | sed 's/[^0-9.]//g'): $(find "$plugin_dir" -name '*.so' | wc -l) plugins kept; left out: ${left_out[*]:-none}" \
    >"$kit_dir/OPEN_MPI.txt"
}

source_dir="$repo_root"
build_dir=""
kit_dir=""
jobs=2
with_mpi=0
while (($# > 0)); do
  case "$1" in
    --mpi) with_mpi=1; shift ;;
    --source) source_dir="$(cd "${2:?--source needs a folder}" && pwd)"; shift 2 ;;
    --build) build_dir="${2:?--build needs a folder}"; shift 2 ;;
    --kit) kit_dir="${2:?--kit needs a folder}"; shift 2 ;;
    --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) die "unknown argument '$1'; see --help" ;;
  esac
done
kit_name=device-kit
((with_mpi)) && kit_name=device-kit-mpi
build_dir="${build_dir:-$source_dir/build-${kit_name/-kit/}}"
kit_dir="${kit_dir:-$repo_root/$kit_name}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "--jobs '$jobs' is not a positive integer"
[[ -f "$source_dir/meson.build" ]] || die "$source_dir: no meson.build; pass a dl-train tree"
for f in "${kDataFiles[@]}"; do
  [[ -f "$kDataSource/$f" ]] || die "$kDataSource/$f: missing; install dataset-fashion-mnist"
done

nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
[[ -x "$nvcc" ]] || die "nvcc not found on PATH or in /usr/local/cuda/bin; install the CUDA toolkit"
cuda_root="$(dirname "$(dirname "$nvcc")")"
cudart_static=""
for candidate in "$cuda_root/lib64" "$cuda_root/lib" "$cuda_root/targets/x86_64-linux/lib"; do
  if [[ -f "$candidate/libcudart_static.a" ]]; then
    cudart_static="$candidate/libcudart_static.a"
    break
  fi
done

# The static runtime, as a whole archive, comes first on the link line: meson puts cpp_link_args
# before the libraries (opening its --start-group at this archive), so every cuda* symbol
# resolves to it and --as-needed drops the libcudart.so that cuda/meson.build adds.
link_args="-Wl,--gc-sections"
if [[ -n "$cudart_static" ]]; then
  link_args+=" -Wl,--push-state,--whole-archive $cudart_static -Wl,--pop-state -ldl -lrt"
else
  echo "build_kit.sh: no libcudart_static.a under $cuda_root: the CUDA runtime stays shared" >&2
fi

# Without oneDNN (-Donednn=disabled): the GPU kits check the CUDA backend against the CPU's
# BLAS path, and oneDNN's 40 MB library travels only in the CPU scaling kit
# (scripts/device/build_cpu_kit.sh).
setup_options=(
  -Dbuildtype=release -Dnative_cpu=false -Dblas=reference -Dcuda=enabled -Donednn=disabled
  -Dgpu_architectures="$kGpuArchitectures"
  "-Dcpp_args=-ffunction-sections -fdata-sections" "-Dcpp_link_args=$link_args"
)
if ((with_mpi)); then
  # Debian's Open MPI has no static libraries, and static linking would take the static hwloc
  # and libevent its pkg-config file lists (libhwloc.a then needs libudev, which it does not
  # name): this build links dynamically and lib/ holds every library outside the system's.
  setup_options+=(-Dprefer_static=false -Dmpi=enabled -Dtests=false)
else
  setup_options+=(-Dprefer_static=true -Dmpi=disabled -Dtests=true)
fi
start_seconds=$SECONDS
echo "==> meson setup $build_dir (source $source_dir)"
mkdir -p "$build_dir"
setup_log="$(mktemp -t kit-setup.XXXXXX.log)" # meson --wipe would delete it inside $build_dir
# A build folder set up with other options is wiped: meson keeps the libraries it found (static
# or shared) across --reconfigure.
options_file="$build_dir/kit-options.txt"
if [[ -f "$build_dir/build.ninja" && "$(cat "$options_file" 2>/dev/null)" == "${setup_options[*]}" ]]; then
  echo "    (set up with these options already)" >"$setup_log"
else
  wipe=()
  [[ -f "$build_dir/build.ninja" ]] && wipe=(--wipe)
  meson setup "${wipe[@]}" "${setup_options[@]}" "$build_dir" "$source_dir" >"$setup_log" 2>&1 ||
    { tail -n 30 "$setup_log" >&2; die "meson setup failed; log: $setup_log"; }
  echo "${setup_options[*]}" >"$options_file"
fi
grep -E "CUDA backend|Library (cudart|blas)|Dependency MPI|MPI for cpp" "$setup_log" || true
mv "$setup_log" "$build_dir/kit-setup.log"

test_programs=()
if ((!with_mpi)); then
  mapfile -t test_programs < <(ninja -C "$build_dir" -t targets all |
    sed -n 's/^\(tests\/cuda\/[A-Za-z0-9_]*\): cpp_LINKER$/\1/p' | sort)
fi
programs=(dl-train "${test_programs[@]}")
# The generator of CIFAR-format batches, for gpu_checks.sh's cifar stage (no CIFAR-10 here).
((with_mpi)) || programs+=(tests/tools/make_cifar_dataset)
# The parameters of two runs' models, for gpu_checks.sh's nccl2 stage.
((with_mpi)) || programs+=(tests/tools/compare_models)
echo "==> ninja -j$jobs ${programs[*]}"
ninja -C "$build_dir" -j"$jobs" -k 0 "${programs[@]}" || true

built=()
failed=()
for program in "${programs[@]}"; do
  # A second, no-op ninja call per program tells which ones are up to date (built).
  if ninja -C "$build_dir" "$program" >/dev/null 2>&1; then
    built+=("$program")
  else
    failed+=("$program")
  fi
done
required_programs=("${kRequiredPrograms[@]}")
((with_mpi)) && required_programs=(dl-train)
for program in "${required_programs[@]}"; do
  [[ " ${built[*]} " == *" $program "* ]] ||
    die "$program did not build (see the ninja output above); if cuda/ is mid-edit, build a clean export: --source /tmp/kit-src"
done
echo "==> built in $((SECONDS - start_seconds)) s: ${built[*]}${failed:+; FAILED: ${failed[*]}}"

rm -rf "$kit_dir"
mkdir -p "$kit_dir/bin" "$kit_dir/lib" "$kit_dir/data/fashion-mnist"
for program in "${built[@]}"; do
  strip --strip-unneeded -o "$kit_dir/bin/$(basename "$program")" "$build_dir/$program"
done
if ((with_mpi)); then
  rmdir "$kit_dir/data/fashion-mnist" "$kit_dir/data"
  add_open_mpi_runtime
else
  for f in "${kDataFiles[@]}"; do
    cp "$kDataSource/$f" "$kit_dir/data/fashion-mnist/"
  done
fi

# Every library a program needs must be the device's own or in the kit's lib/.
unexpected=()
for binary in "$kit_dir"/bin/*; do
  while read -r library; do
    if [[ ! "$library" =~ $kSystemLibraries && ! -f "$kit_dir/lib/$library" ]]; then
      unexpected+=("$(basename "$binary"): $library")
    fi
  done < <(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done
if [[ -z "$cudart_static" ]]; then
  cp -L "$cuda_root"/lib64/libcudart.so.[0-9]* "$kit_dir/lib/" 2>/dev/null || true
fi
rmdir "$kit_dir/lib" 2>/dev/null || true

source_version="(not a git checkout: say in your notes which commit it was exported from)"
if git -C "$source_dir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  source_version="$(git -C "$source_dir" rev-parse --short HEAD)"
  [[ -z "$(git -C "$source_dir" status --porcelain --untracked-files=no)" ]] || source_version+=" with uncommitted changes"
fi
max_version() { # the highest symbol version $2 (GLIBC_, GLIBCXX_) that binary $1 needs
  local found
  found="$(objdump -T "$1" | grep -o "$2[0-9.]*" | sort -u -V | tail -n 1)"
  echo "${found:-none}"
}
{
  echo "dl-train GPU session kit, built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "source: $source_dir at $source_version"
  echo "meson options: ${setup_options[*]}"
  echo "nvcc: $("$nvcc" --version | tail -n 1)"
  if [[ -n "$cudart_static" ]]; then
    echo "CUDA runtime: static ($cudart_static)"
  else
    echo "CUDA runtime: shared (libcudart.so copied into lib/)"
  fi
  echo "programs: ${built[*]}"
  [[ ${#failed[@]} -eq 0 ]] || echo "did not build: ${failed[*]}"
  for binary in "$kit_dir"/bin/*; do
    echo "$(basename "$binary"): $(stat -c %s "$binary") bytes; needs" \
      "$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')" \
      "(glibc symbols up to $(max_version "$binary" GLIBC_), libstdc++ up to $(max_version "$binary" GLIBCXX_))"
  done
} >"$kit_dir/MANIFEST.txt"
cat "$kit_dir/MANIFEST.txt"

if ((${#unexpected[@]} > 0)); then
  printf '  %s\n' "${unexpected[@]}" >&2
  die "the programs above need libraries the device machine does not have and the kit lacks"
fi
total_bytes="$(du -sb "$kit_dir" | cut -f1)"
echo "==> $kit_dir: $((total_bytes / kMebibyte)).$(((total_bytes % kMebibyte) * 10 / kMebibyte)) MiB ($total_bytes bytes) in all"
du -sb "$kit_dir"/* | sed 's/^/    /'
((total_bytes <= kKitLimitMiB * kMebibyte)) ||
  die "the kit is over $kKitLimitMiB MiB: a run call carries 64 MiB with the tree"
echo "==> done in $((SECONDS - start_seconds)) s"
