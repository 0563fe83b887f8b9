#!/usr/bin/env bash
# Installs what the real Pupil Capture v3.6 needs to run headless here, once: Debian packages, a
# Python 3.11 venv with Capture's requirements and the pins its v3.6 wheels need, and a git-tagged
# copy of its source (Capture reads its version with `git describe`). Idempotent: a stamp of the
# requirements and pins skips what is already there. Prints the two paths the harness reads.
#   usage: install.sh SHARED_PUPIL_CAPTURE_DIR   (env STREAMDP_CAPTURE_HOME: where; default ~/.cache)
set -euo pipefail
source_dir=$(cd "$1/v3.6" && pwd)
home=${STREAMDP_CAPTURE_HOME:-$HOME/.cache/streamdp-capture}
mkdir -p "$home"

packages=(xvfb libportaudio2 libusb-1.0-0 libturbojpeg0 libgl1-mesa-dri libglu1-mesa libgl1 libegl1 libglib2.0-0
          libxrender1 libxext6 libsm6 libxcursor1 libxrandr2 libxinerama1 libxi6 iproute2
          nftables)  # nftables: the documented private setup closes the backbone with it
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" > /dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null
fi

# the v3.6 wheels of pye3d and pupil-detectors are built against numpy 1.x; av 12.3 is the
# oldest with a cp311 wheel and still has av.AVError, which Capture calls
pins=("numpy<2" "av==12.3.0" "opencv-python<4.11" "packaging<22")
python=${STREAMDP_CAPTURE_PYTHON:-python3.11}
command -v "$python" > /dev/null || python=python3
stamp="$(sha256sum "$source_dir/requirements.txt" | cut -c1-16)-$(echo "${pins[*]}" | sha256sum | cut -c1-16)"
venv="$home/venv"
if [ "$(cat "$venv/.streamdp-stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "building Capture's venv at $venv (about a minute)" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -r "$source_dir/requirements.txt" "${pins[@]}"
    echo "$stamp" > "$venv/.streamdp-stamp"
fi

checkout="$home/pupil-v3.6"
if [ "$(git -C "$checkout" describe --tags 2>/dev/null)" != "v3.6" ]; then
    rm -rf "$checkout"
    cp -r "$source_dir" "$checkout"
    chmod -R u+w "$checkout"
    git -C "$checkout" init -q
    git -C "$checkout" add -A
    git -C "$checkout" -c user.name=streamdp -c user.email=streamdp@localhost commit -qm "Pupil Capture v3.6"
    git -C "$checkout" tag v3.6
fi
echo "python=$venv/bin/python"
echo "checkout=$checkout"
