#!/bin/sh
# Rebuild dashboard/assets/plotly-xlaprof.min.js from entry.js (needs node and npm; run from anywhere).
# plotly.js's version is the one the installed Python plotly ships (plotly.offline.get_plotlyjs_version()).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/entry.js" "$work/"
cd "$work"
echo '{"name": "xlaprof-plotly-bundle", "private": true}' > package.json
npm install --no-audit --no-fund --ignore-scripts plotly.js@4.1.1 esbuild@0.28.2
./node_modules/.bin/esbuild entry.js --bundle --minify --format=iife --global-name=Plotly --platform=browser \
    --legal-comments=none --loader:.css=empty --define:global=window --outfile="$here/../assets/plotly-xlaprof.min.js"
