// A message's versions, oldest first (GET /messages/{id}/history), opened from its
// "edited" or "moved" marker: who changed what when, the text with its changes marked.

import { signal } from '@preact/signals';
import { useEffect, useState } from 'preact/hooks';
import { get } from '../api';
import { topicDisplay, userName } from '../store';
import { Dialog } from './Dialog';
import { SafeHtml } from './SafeHtml';
import { formatFull } from './util';

/** One version, as the server sends it. */
export interface Version {
  timestamp: number;
  user_id?: number | null;
  topic?: string;
  prev_topic?: string;
  stream?: number;
  prev_stream?: number;
  rendered_content?: string;
  prev_rendered_content?: string;
  content_html_diff?: string;
}

const shown = signal<number | undefined>(undefined);

export function openEditHistory(id: number): void {
  shown.value = id;
}

/** What a version did, in words: posted, edited, moved (or several). */
export function describeVersion(v: Version, first: boolean): string {
  const who = v.user_id == null ? 'someone' : userName(v.user_id);
  if (first) return `Posted by ${who}`;
  const what: string[] = [];
  if (v.prev_rendered_content !== undefined) what.push('edited');
  if (v.prev_topic !== undefined || v.prev_stream !== undefined) what.push('moved');
  return `${what.length === 0 ? 'Changed' : what.join(' and ').replace(/^./, (c) => c.toUpperCase())} by ${who}`;
}

export function EditHistory() {
  const id = shown.value;
  if (id === undefined) return null;
  return <HistoryView id={id} key={id} />;
}

function HistoryView({ id }: { id: number }) {
  const [versions, setVersions] = useState<Version[] | undefined>(undefined);
  const [err, setErr] = useState('');
  useEffect(() => {
    void get<{ message_history: Version[] }>(`messages/${id}/history`, { allow_empty_topic_name: true })
      .then((r) => setVersions(r.message_history))
      .catch((e: unknown) => setErr(e instanceof Error ? e.message : String(e)));
  }, [id]);
  const close = () => { shown.value = undefined; };
  return (
    <Dialog title="Message edit history" onClose={close} wide>
      {err && <p class="error" role="alert">{err}</p>}
      {versions === undefined && err === '' && <p role="status">Loading…</p>}
      {versions !== undefined && (
        <ol class="edit-history">
          {versions.map((v, i) => (
            <li key={i} class="edit-version">
              <p class="edit-version-head">
                <strong>{describeVersion(v, i === 0)}</strong>
                <span class="muted"> · {formatFull(v.timestamp)}</span>
              </p>
              {v.prev_topic !== undefined && v.topic !== undefined && (
                <p class="edit-version-topic">Topic: <del>{topicDisplay(v.prev_topic)}</del> → <ins>{topicDisplay(v.topic)}</ins></p>
              )}
              {(i === 0 || v.prev_rendered_content !== undefined) && (
                <SafeHtml class="rendered_markdown edit-version-content" html={v.content_html_diff ?? v.rendered_content ?? ''} />
              )}
            </li>
          ))}
        </ol>
      )}
    </Dialog>
  );
}
