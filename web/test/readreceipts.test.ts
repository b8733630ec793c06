import { describe, expect, it } from 'vitest';
import { readersByName, readReceiptsEnabled } from '../src/ui/ReadReceipts';

describe('read receipts', () => {
  it('are offered only when the organization shows them', () => {
    expect(readReceiptsEnabled({ realm_enable_read_receipts: true })).toBe(true);
    expect(readReceiptsEnabled({ realm_enable_read_receipts: false })).toBe(false);
    expect(readReceiptsEnabled({})).toBe(false);
  });

  it('list the readers by name, case-blind, then by id', () => {
    const names = new Map([[3, 'iago'], [5, 'Cordelia'], [7, 'Iago'], [9, 'aaron']]);
    expect(readersByName([3, 5, 7, 9], (id) => names.get(id) ?? '').map((u) => u.id)).toEqual([9, 5, 3, 7]);
    expect(readersByName([], () => '')).toEqual([]);
  });
});
