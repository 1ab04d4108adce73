// Service worker: after one visit the app loads with the network off.
// Install: cache index.html and every asset it references (Trunk's hashed .js/.wasm/.css).
// Navigations: network first, the cached page when offline. A new deploy's page replaces
// the cached one only once every asset it references is cached too; then the older
// deploy's assets are dropped. Until then the cached page and its assets stay whole, so a
// connection lost in the middle of a deploy's first load still leaves a working offline
// copy (tests/e2e "offline after a deploy").
// Assets: cache first (their names change with their content), stored as they are fetched.
// The on-demand files, names without a hash: the reference suite (fetched by the accuracy
// panel) and the formats worker with its wasm (started by the first import or export of
// another tool's file): cached at install with the page, then network first like the
// page, the cached copy when offline.
// Paths are relative to this file, so the site works under any sub-path (GitHub Pages).
const CACHE = 'gpu-mem-calc-v1';
const INDEX = new URL('./', self.location).href;
const DATA = ['probe_records.jsonl', 'dist_records.jsonl', 'published_cases.json',
  'formats-worker.js', 'gpu-mem-calc-wasm.js', 'gpu-mem-calc-wasm_bg.wasm']
  .map(f => new URL(f, INDEX).href);

// The assets index.html references: quoted or, in Trunk's minified HTML, bare attribute
// values (./name-hash.ext).
function assetsOf(html) {
  const assets = new Set();
  for (const m of html.matchAll(/[=\s"'`(]\.?\/?([\w.\-]+\.(?:js|wasm|css))(?=[\s"'`)>]|$)/g)) {
    assets.add(new URL(m[1], INDEX).href);
  }
  return assets;
}

// Drops cached assets the current index.html no longer references (an older deploy's).
async function prune(cache, html) {
  const keep = assetsOf(html);
  for (const req of await cache.keys()) {
    if (req.url !== INDEX && !DATA.includes(req.url) && !keep.has(req.url)) await cache.delete(req);
  }
}

// Makes `resp` (a freshly fetched index.html) the cached page once all of its assets are
// cached, then prunes the rest; leaves the cache as it was if any asset cannot be fetched.
async function adopt(cache, resp) {
  const html = await resp.clone().text();
  try {
    const missing = [];
    for (const url of assetsOf(html)) if (!(await cache.match(url))) missing.push(url);
    await cache.addAll(missing);
  } catch (e) {
    return;
  }
  await cache.put(INDEX, resp);
  await prune(cache, html);
}

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    const resp = await fetch(INDEX, { cache: 'no-cache' });
    const html = await resp.clone().text();
    await cache.put(INDEX, resp);
    await cache.addAll([...assetsOf(html), ...DATA]);
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const key of await caches.keys()) {
      if (key !== CACHE) await caches.delete(key);
    }
    await self.clients.claim();
  })());
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET' || new URL(req.url).origin !== self.location.origin) return;
  if (DATA.includes(req.url)) {
    event.respondWith((async () => {
      const cache = await caches.open(CACHE);
      try {
        const resp = await fetch(req, { cache: 'no-cache' });
        if (resp.ok) await cache.put(req, resp.clone());
        return resp;
      } catch (e) {
        return (await cache.match(req)) || Response.error();
      }
    })());
    return;
  }
  if (req.mode === 'navigate') {
    event.respondWith((async () => {
      const cache = await caches.open(CACHE);
      try {
        const resp = await fetch(req);
        if (resp.ok) event.waitUntil(adopt(cache, resp.clone()));
        return resp;
      } catch (e) {
        return (await cache.match(INDEX)) || Response.error();
      }
    })());
    return;
  }
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    const hit = await cache.match(req);
    if (hit) return hit;
    const resp = await fetch(req);
    if (resp.ok) await cache.put(req, resp.clone());
    return resp;
  })());
});
