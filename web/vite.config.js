// Builds the console into one script and one stylesheet with fixed names, so CMake knows the
// files it embeds into `sluice serve` (cmake/embed_web.cmake). No inline script or style: the
// server's Content-Security-Policy allows only 'self'.
import { defineConfig } from 'vite';

export default defineConfig({
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: process.env.SLUICE_WEB_OUT || 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    rollupOptions: {
      output: {
        entryFileNames: 'assets/console.js',
        chunkFileNames: 'assets/[name].js',
        assetFileNames: 'assets/[name][extname]',
      },
    },
  },
  test: { environment: 'node', include: ['tests/unit/**/*.test.js'] },
});
