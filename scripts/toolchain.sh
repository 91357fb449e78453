# Sourced by setup.sh, test.sh and demo.sh: the toolchain (UNIF_TORCH, see setup.sh) and its
# build directory (BUILD_DIR overrides).
UNIF_TORCH=${UNIF_TORCH:-debian}
case "$UNIF_TORCH" in
  debian) BUILD_DIR=${BUILD_DIR:-build} ;;
  pypi) BUILD_DIR=${BUILD_DIR:-build-pypi} ;;
  system) BUILD_DIR=${BUILD_DIR:-build-gpu} ;;
  *) echo "error: UNIF_TORCH='$UNIF_TORCH': expected debian, pypi or system" >&2; exit 2 ;;
esac
export UNIF_TORCH BUILD_DIR
