#!/usr/bin/env bash
# The README's first command: installs what is missing, then serves the lab at
# http://127.0.0.1:8080 (release build: the recompute is about ten times faster than debug).
set -Eeuo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$ROOT/scripts/install-tools.sh"
# The text view's model (46 MB, cached after the first time); without it the rest of the lab works
# and the text view says how to get it.
"$ROOT/scripts/fetch-model.sh" || echo "warning: the model could not be fetched; the text view will say so" >&2
cd "$ROOT"
exec trunk serve --release "$@"
