/** Debian's chromium (bash infra/local/test-deps.sh installs it), driven headless by playwright-core. */
export const CHROMIUM = '/usr/bin/chromium';

/** Headless, no sandbox (containers), and nothing that reaches out to Google on its own. */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
