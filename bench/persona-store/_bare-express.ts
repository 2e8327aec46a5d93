/** The ceiling: a bare Express endpoint answering a small JSON body, in its own process like the service. */
import express from 'express';

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
const body = {
  persona: { profile: 'bench', display_name: 'Bench' },
  fields: [],
  notes: [],
  field_count: 1000,
  note_count: 10000,
};
app.get('/bare', (_req, res) => {
  res.json(body);
});
const server = app.listen(Number(process.argv[2]), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
