// The image's HEALTHCHECK: 0 when the service answers GET /healthz with 200, else 1.
// Every service serves /healthz on HTTP_PORT (the image sets 9400); the sandbox serves it on its
// control port, so its container sets HEALTHCHECK_URL.
const url = process.env['HEALTHCHECK_URL'] ?? `http://127.0.0.1:${process.env['HTTP_PORT'] ?? '9400'}/healthz`;
try {
  const res = await fetch(url, { signal: AbortSignal.timeout(4_000) });
  process.exit(res.ok ? 0 : 1);
} catch {
  process.exit(1);
}
