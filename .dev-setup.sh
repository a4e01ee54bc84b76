# Source this in a checkout (or git worktree) to import tokenlaw.* from *this* tree without installing:
#   source .dev-setup.sh && python -m tokenlaw.app.cli list
# It builds .dev/tokenlaw/<pkg> -> ../../<pkg> symlinks (and one per module of the root: the public face
# __init__.py, errors.py) and puts .dev on PYTHONPATH.
_tl_root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$_tl_root/.dev/tokenlaw"
for _d in process operators properties symbolic fuzz kernels reports orchestration integrations app experiments docs; do
  ln -sfn "../../$_d" "$_tl_root/.dev/tokenlaw/$_d"
done
for _f in "$_tl_root"/*.py; do
  ln -sfn "../../${_f##*/}" "$_tl_root/.dev/tokenlaw/${_f##*/}"
done
export PYTHONPATH="$_tl_root/.dev${PYTHONPATH:+:$PYTHONPATH}"
tokenlaw() { python -m tokenlaw.app.cli "$@"; }
