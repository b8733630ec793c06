import { describe, expect, it } from 'vitest';
import { describeVersion } from '../src/ui/EditHistory';

describe('the edit history', () => {
  it('says what each version did', () => {
    expect(describeVersion({ timestamp: 1, user_id: null, rendered_content: '<p>a</p>' }, true)).toBe('Posted by someone');
    expect(describeVersion({ timestamp: 2, user_id: null, prev_rendered_content: '<p>a</p>' }, false)).toBe('Edited by someone');
    expect(describeVersion({ timestamp: 3, user_id: null, prev_topic: 'x', topic: 'y' }, false)).toBe('Moved by someone');
    expect(describeVersion({ timestamp: 4, user_id: null, prev_topic: 'x', topic: 'y', prev_rendered_content: '' }, false)).toBe('Edited and moved by someone');
  });
});
