// Who has read a message (GET /messages/{id}/read_receipts), from its actions, when
// the organization shows read receipts. The server leaves out the sender and everyone
// who turned their own read receipts off.

import { signal } from '@preact/signals';
import { useEffect, useState } from 'preact/hooks';
import { get } from '../api';
import { realm, userName } from '../store';
import { Avatar } from './Avatar';
import { Dialog } from './Dialog';

const shown = signal<number | undefined>(undefined);

export function openReadReceipts(id: number): void {
  shown.value = id;
}

/** Whether the organization lets its members see who read a message. */
export function readReceiptsEnabled(r: Record<string, unknown> = realm.value): boolean {
  return r.realm_enable_read_receipts === true;
}

/** Pure: the readers, by name (case-blind, then by id for equal names). */
export function readersByName(ids: readonly number[], nameOf: (id: number) => string): { id: number; name: string }[] {
  return ids.map((id) => ({ id, name: nameOf(id) }))
    .sort((a, b) => a.name.localeCompare(b.name, undefined, { sensitivity: 'base' }) || a.id - b.id);
}

export function ReadReceipts() {
  const id = shown.value;
  if (id === undefined) return null;
  return <ReceiptsView id={id} key={id} />;
}

function ReceiptsView({ id }: { id: number }) {
  const [readers, setReaders] = useState<number[] | undefined>(undefined);
  const [err, setErr] = useState('');
  useEffect(() => {
    void get<{ user_ids: number[] }>(`messages/${id}/read_receipts`)
      .then((r) => setReaders(r.user_ids))
      .catch((e: unknown) => setErr(e instanceof Error ? e.message : String(e)));
  }, [id]);
  const close = () => { shown.value = undefined; };
  const list = readers === undefined ? [] : readersByName(readers, userName);
  return (
    <Dialog title="Read receipts" onClose={close}>
      {err && <p class="error" role="alert">{err}</p>}
      {readers === undefined && err === '' && <p role="status">Loading…</p>}
      {readers !== undefined && (
        <>
          <p>{list.length === 0 ? 'Nobody has read this message yet.' : `Read by ${list.length} ${list.length === 1 ? 'person' : 'people'}:`}</p>
          {list.length > 0 && (
            <ul class="read-receipts">
              {list.map((u) => (
                <li key={u.id}><Avatar userId={u.id} size={24} cls="small" /><span>{u.name}</span></li>
              ))}
            </ul>
          )}
          <p class="muted">The sender, and people who turned off their read receipts, are not listed.</p>
        </>
      )}
    </Dialog>
  );
}
