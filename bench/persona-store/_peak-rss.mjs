// Preloaded into a command the import benchmark runs: prints the process's peak resident memory as it exits.
process.on('exit', () => process.stderr.write(`peak-rss-kb ${process.resourceUsage().maxRSS}\n`));
