/**
 * Ordinary prose, code and configuration a persona store must accept: at least 200 strings, several
 * of them close to credential shapes without being one (placeholders, hashes, ids, prefixes in prose).
 */
const sentences = [
  'She prefers short answers in the morning and longer ones in the evening.',
  'He is allergic to peanuts and does not like coriander.',
  'Their daughter starts school in September.',
  'The meeting with the landlord went badly; follow up next week.',
  'Remember that the cat is called Miso and is fourteen years old.',
  'Lesson: ask before rescheduling anything on a Friday.',
  'The user runs a small bakery and gets up at four.',
  'She is learning Portuguese and likes to practise over breakfast.',
  'He said the password manager is the only place secrets belong.',
  'Use metric units; temperatures in Celsius.',
  'Favourite books: Middlemarch, The Dispossessed, and Piranesi.',
  'The AKIA prefix marks AWS access key ids; never paste one here.',
  'Tokens that start with ghp_ are GitHub personal access tokens.',
  'sk-learn is a common misspelling of scikit-learn.',
  'Her GitHub username is octo-cat and she mostly writes Rust.',
  'The API key lives in the identity service, not here.',
  'Set the password in the vault, then restart the service.',
  'The build broke because of a missing semicolon.',
  'Commit 3f2a9c1 introduced the regression in the parser.',
  'The release tag is v2.14.3 and the changelog is on the wiki.',
  'Our Slack channel is #kitchen-ops.',
  'Stripe payouts arrive on Tuesdays.',
  'The OpenAI and Anthropic dashboards show usage per day.',
  'Use Google Maps for directions, never Apple Maps.',
  'He prefers the dark theme and a 14pt font.',
  'Bedtime reading: poetry, no news after 9pm.',
  'Her phone number is kept in the contacts app, not here.',
  'Spelling: colour, favourite, organise (British).',
  'Avoid scheduling calls during Ramadan afternoons.',
  'The dog, Pepper, needs her medication at 8am and 8pm.',
  'He asked to be reminded to water the tomatoes.',
  'The invoice number was INV-2024-00017.',
  'Her favourite tea is Earl Grey with a slice of lemon.',
  'The printer on the second floor jams on A3 paper.',
  'A UUID like 3fa85f64-5717-4562-b3fc-2c963f66afa6 identifies the order.',
  'The checksum sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 matched.',
  'Keys such as "sk_test_" appear in Stripe docs as prefixes only.',
  'The JWT spec is RFC 7519; the header is base64url-encoded JSON.',
  'BEGIN and END markers frame PEM files; public keys are fine to share.',
  'Connection strings look like postgres://user@host/db without a password.',
];

const code = [
  'const total = items.reduce((sum, item) => sum + item.price, 0);',
  'def greet(name):\n    return f"Hello, {name}!"',
  'SELECT id, name FROM users WHERE created_at > now() - interval \'1 day\';',
  'git commit -m "fix: handle empty lists in the parser"',
  'npm install --save-exact zod',
  'docker run --rm -p 8080:80 nginx:1.27',
  'for (let i = 0; i < 10; i++) console.log(i);',
  'export function add(a: number, b: number): number { return a + b; }',
  'api_key = os.environ["OPENAI_API_KEY"]',
  'token = request.headers.get("Authorization")',
  'password = getpass.getpass()',
  'const secret = process.env.WEBHOOK_SECRET;',
  'DATABASE_URL=postgres://${DB_USER}:${DB_PASSWORD}@localhost:5432/app',
  'redis://localhost:6379/0',
  'https://example.com/path?query=1&other=two',
  'curl -H "Authorization: Bearer $TOKEN" https://api.example.com/v1/me',
  'ssh-keygen -t ed25519 -C "me@example.com"',
  'kubectl get pods -n production',
  'if err != nil { return fmt.Errorf("open: %w", err) }',
  'fn main() { println!("hello"); }',
  '-----BEGIN PUBLIC KEY-----',
  'ls -la ~/.config',
  'import numpy as np\nx = np.arange(10)',
  'x = {"a": 1, "b": [1, 2, 3]}',
  'CREATE INDEX idx_users_email ON users (email);',
];

const config = [
  'port: 8080\nhost: 127.0.0.1',
  '[server]\nport = 8004\nlog_level = "info"',
  'LOG_LEVEL=debug',
  'timeout_seconds = 30',
  'retries: 3\nbackoff: exponential',
  '{"theme": "dark", "fontSize": 14}',
  'password: <your password here>',
  'api_key: ${API_KEY}',
  'secret: "****"',
  'AWS_REGION=eu-west-1',
  'NODE_ENV=production',
  'max_connections = 100',
  'image: ghcr.io/example/app:1.4.2',
  'username: alice\nemail: alice@example.com',
  'cron: "0 4 * * *"',
];

const topics = ['gardening', 'cycling', 'jazz', 'chess', 'baking', 'hiking', 'pottery', 'astronomy', 'knitting', 'sailing', 'photography', 'Go programming'];
const habits = [
  'likes to talk about',
  'wants weekly reminders about',
  'is a beginner at',
  'has taught a class on',
  'reads a magazine about',
  'would like fewer messages about',
  'spent the weekend on',
  'saves money for',
  'joined a club for',
  'asks for book suggestions on',
  'prefers mornings for',
];

/** At least 200 strings: the hand-written ones above plus sentences built from topics and habits. */
export function ordinaryCorpus(): string[] {
  const built: string[] = [];
  for (const topic of topics) for (const habit of habits) built.push(`The user ${habit} ${topic}.`);
  return [...sentences, ...code, ...config, ...built];
}
