// Bundles entry.js as plotly.js's own build does (its esbuild-config.js),
// minified, into the file named by the first argument.
const esbuild = require('esbuild');
const { environmentPlugin } = require('esbuild-plugin-environment');
const { glsl } = require('esbuild-plugin-glsl');
const InlineCSSPlugin = require('esbuild-plugin-inline-css');

esbuild.build({
    entryPoints: ['./entry.js'],
    outfile: process.argv[2],
    format: 'iife',
    globalName: 'Plotly',
    bundle: true,
    minify: true,
    plugins: [InlineCSSPlugin(), glsl({ minify: true }), environmentPlugin({ NODE_DEBUG: false })],
    alias: { regl: '@plotly/regl', stream: 'stream-browserify' },
    define: { global: 'window', 'define.amd': 'false' },
    target: 'es2016',
    logLevel: 'warning'
}).catch(() => process.exit(1));
