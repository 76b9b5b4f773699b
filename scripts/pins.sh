# Sourced by setup.sh and wheelhouse.sh: reads the torch pair from src/fxcourse/_pins.py (the one
# place that names it) into $torch_version and $torchvision_version, and builds the pip
# arguments for that pair in the array torch_pair. Needs $base_python (any Python 3).
# A local CPU-only torch wheel does not pair with the index's torchvision ("operator
# torchvision::nms does not exist"), so the +cpu build is excluded; the index's build runs on
# CPU-only machines. FXCOURSE_TORCH_INDEX=URL picks the smaller CPU-only pair instead (both
# +cpu, about 1 GB less): URL is a package index that holds both, such as PyTorch's own CPU
# wheel index (pytorch.org's install selector names it). Not tested in CI; `fxcourse doctor`
# says whether the pair that arrived matches.
read -r torch_version torchvision_version < <("$base_python" - src/fxcourse/_pins.py <<'PY'
import sys
pins = {}
exec(open(sys.argv[1], encoding="utf-8").read(), pins)
print(pins["TORCH"], pins["TORCHVISION"])
PY
)
[ -n "${torch_version:-}" ] && [ -n "${torchvision_version:-}" ] || {
  echo "[setup] cannot read the torch pair from src/fxcourse/_pins.py" >&2; exit 1; }
torch_pair=("torch==$torch_version,!=$torch_version+cpu" "torchvision==$torchvision_version")
if [ -n "${FXCOURSE_TORCH_INDEX:-}" ]; then
  torch_pair=(--extra-index-url "$FXCOURSE_TORCH_INDEX" "torch==$torch_version+cpu"
              "torchvision==$torchvision_version+cpu")
fi
