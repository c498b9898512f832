const mode = process.argv[2];
const { collectDefaultMetrics, Registry } = await import('prom-client');
if (mode === 'default') collectDefaultMetrics({ register: new Registry() });
if (mode.startsWith('p')) collectDefaultMetrics({ register: new Registry(), eventLoopMonitoringPrecision: Number(mode.slice(1)) });
setInterval(() => {}, 1 << 30);
const a = process.cpuUsage(); const t = Date.now();
setTimeout(() => { const d = process.cpuUsage(a); console.log(mode, ((d.user + d.system) / 1000 / ((Date.now() - t) / 1000)).toFixed(2), 'ms CPU per s'); process.exit(0); }, 20000);
