import { describe, expect, it } from 'vitest';
import { otherNodeLine } from './node-line.ts';

describe('otherNodeLine', () => {
  const engines = '>=24.11.0 <25';

  it('accepts a Node.js inside engines', () => {
    for (const version of ['24.11.0', '24.11.1', '24.21.0', '24.99.99'])
      expect(otherNodeLine(version, engines), version).toBeUndefined();
  });

  it('names the version, the range and the way to the right line for one outside', () => {
    for (const version of ['20.20.2', '22.12.0', '24.10.9', '24.2.0', '25.0.0', '26.1.0']) {
      const said = otherNodeLine(version, engines);
      expect(said, version).toContain(`This is Node.js ${version}`);
      expect(said).toContain('>=24.11.0 <25');
      expect(said).toContain('. .ci/use-node');
    }
  });

  it('reads package.json\u2019s own engines, which this suite runs inside', () => {
    expect(otherNodeLine()).toBeUndefined();
  });
});
