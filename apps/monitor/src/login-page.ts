/**
 * The page a browser without an operator session gets (with 401): one field for the operator key,
 * posted as JSON with the CSRF header to /api/login, which sets an HttpOnly SameSite=Strict
 * session cookie. The key is never stored by the page.
 */
export const LOGIN_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Herald · operator login</title>
<style>
  body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: #f3f5f9; color: #172033; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
  form { background: #fff; border: 1px solid #e4e7ec; border-radius: 12px; padding: 28px; width: 420px; display: grid; gap: 12px; box-shadow: 0 1px 2px rgba(16,24,40,.04); }
  h1 { margin: 0 0 4px; font-size: 18px; }
  p { margin: 0; color: #667085; }
  input { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; padding: 9px 11px; border: 1px solid #d0d5dd; border-radius: 8px; }
  button { background: #4f46e5; color: #fff; border: 0; border-radius: 8px; padding: 9px 14px; font-weight: 600; cursor: pointer; }
  #error { color: #d92d20; min-height: 1.4em; }
  code { background: #f2f4f7; padding: 1px 5px; border-radius: 4px; }
</style>
</head>
<body>
<form id="login">
  <h1>Herald operations</h1>
  <p>Log in with an operator key (<code>npx herald keys create --operator &lt;your name&gt;</code>).</p>
  <input id="key" name="key" type="password" autocomplete="off" placeholder="hko_…" required autofocus>
  <button type="submit">Log in</button>
  <div id="error" role="alert"></div>
</form>
<script>
'use strict';
document.getElementById('login').addEventListener('submit', async (e) => {
  e.preventDefault();
  const res = await fetch('/api/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-herald-csrf': '1' },
    body: JSON.stringify({ key: document.getElementById('key').value.trim() }),
  });
  if (res.ok) { location.replace('/'); return; }
  const body = await res.json().catch(() => ({}));
  document.getElementById('error').textContent = body.error || ('login failed: ' + res.status);
});
</script>
</body>
</html>
`;
