#!/bin/sh
# Builds digitslike/vendor/plotly.min.js: plotly.js, of the version the
# pinned Python package ships, with the traces the pages draw alone (scatter,
# scattergl, bar, heatmap, parcoords) and the WebGL ones in their strict form
# (see digitslike/vendor.py). Needs Node.js and npm; run from anywhere.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
version=$("$root/.venv/bin/python" -c '
import re
from importlib.util import find_spec
from pathlib import Path
head = (Path(find_spec("plotly").origin).parent / "package_data" / "plotly.min.js").read_text()[:200]
print(re.search(r"plotly\.js[^\n]* v(\d+\.\d+\.\d+)", head).group(1))')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$root/digitslike/vendor/plotly-build/entry.js" "$root/digitslike/vendor/plotly-build/build.js" "$work/"
cd "$work"
npm init -y >/dev/null
npm pkg set overrides.to-px=1.0.1  # as plotly.js's own package.json pins it: 1.1.0 reads document.body as it loads
npm install --no-audit --no-fund --ignore-scripts --loglevel=error "plotly.js@$version" esbuild@0.28.1 \
    esbuild-plugin-environment@0.5.0 esbuild-plugin-glsl@1.4.2 esbuild-plugin-inline-css@0.0.1 stream-browserify@3.0.0 buffer@6.0.3
node build.js bundle.js
{
    printf '/**\n* plotly.js (strict, partial: scatter, scattergl, bar, heatmap, parcoords - minified) v%s\n' "$version"
    printf '* Copyright 2012-2026, Plotly, Inc.\n* All rights reserved.\n* Licensed under the MIT license\n*/\n'
    cat bundle.js
} > "$root/digitslike/vendor/plotly.min.js"
echo "digitslike/vendor/plotly.min.js: plotly.js $version, $(wc -c < "$root/digitslike/vendor/plotly.min.js") bytes"
