import { useSignalEffect } from '@preact/signals';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, del, patch, post, upload } from '../api';
import { composeContent, composeDraftId, composeFocus, composeOpen, composeTarget, openCompose, sendMessage, targetFor, type ComposeTarget } from '../compose';
import { loadEmojiData } from '../emoji';
import type { Narrow } from '../narrow';
import { goNarrow } from '../route';
import { me, realm, subs, topics, userName, users, userSettings } from '../store';
import { suggestions, tokenAt, type Suggestion } from './Autocomplete';
import { Icon } from './Icon';
import { SafeHtml } from './SafeHtml';
import { memo } from './util';

let typingSentAt = 0;
let typingStopTimer: ReturnType<typeof setTimeout> | undefined;
let typingTarget: ComposeTarget | undefined;

function typingParams(t: ComposeTarget, op: 'start' | 'stop') {
  return t.type === 'stream'
    ? { type: 'stream', op, stream_id: t.streamId, topic: t.topic }
    : { type: 'direct', op, to: t.to };
}

function valid(t: ComposeTarget): boolean {
  return t.type === 'stream' ? t.streamId !== undefined : t.to.length > 0;
}

export function typingStop(): void {
  if (typingStopTimer !== undefined) clearTimeout(typingStopTimer);
  typingStopTimer = undefined;
  if (typingTarget !== undefined && typingSentAt > 0) void post('typing', typingParams(typingTarget, 'stop')).catch(() => undefined);
  typingSentAt = 0;
  typingTarget = undefined;
}

function typingActivity(t: ComposeTarget): void {
  if (!valid(t)) return;
  const wait = Number(realm.value.server_typing_started_wait_period_milliseconds ?? 10000);
  const now = Date.now();
  if (typingTarget !== undefined && JSON.stringify(typingTarget) !== JSON.stringify(t)) typingStop();
  if (now - typingSentAt > wait) {
    typingSentAt = now;
    typingTarget = t;
    void post('typing', typingParams(t, 'start')).catch(() => undefined);
  }
  if (typingStopTimer !== undefined) clearTimeout(typingStopTimer);
  typingStopTimer = setTimeout(typingStop, Number(realm.value.server_typing_stopped_wait_period_milliseconds ?? 5000));
}

function draftBody(t: ComposeTarget, content: string) {
  return t.type === 'stream'
    ? { type: 'stream', to: t.streamId === undefined ? [] : [t.streamId], topic: t.topic, content, timestamp: Math.floor(Date.now() / 1000) }
    : { type: 'private', to: t.to, topic: '', content, timestamp: Math.floor(Date.now() / 1000) };
}

export async function saveDraft(): Promise<void> {
  const content = composeContent.value.trim();
  if (content === '') return;
  const body = draftBody(composeTarget.value, composeContent.value);
  const id = composeDraftId.value;
  try {
    if (id !== undefined) await patch(`drafts/${id}`, { draft: body });
    else {
      const res = await post<{ ids: number[] }>('drafts', { drafts: [body] });
      composeDraftId.value = res.ids[0];
    }
  } catch {
    /* Drafts are a convenience; the text stays in the box. */
  }
}

export function closeCompose(): void {
  typingStop();
  void saveDraft().then(() => {
    composeContent.value = '';
    composeDraftId.value = undefined;
  });
  composeOpen.value = false;
}

function Recipients({ to, onChange }: { to: number[]; onChange: (ids: number[]) => void }) {
  const [q, setQ] = useState('');
  const [active, setActive] = useState(0);
  const lower = q.toLowerCase();
  const options = q === '' ? [] : [...users.value.values()]
    .filter((u) => u.is_active && !to.includes(u.user_id) && (u.full_name.toLowerCase().includes(lower) || u.email.toLowerCase().includes(lower) || (u.delivery_email ?? '').toLowerCase().includes(lower)))
    .slice(0, 8);
  const add = (id: number) => { onChange([...to, id]); setQ(''); setActive(0); };
  return (
    <div class="recipients">
      <span class="pills" aria-live="polite">
        {to.map((id) => (
          <span class="pill" key={id}>{userName(id)}
            <button type="button" class="pill-remove" aria-label={`Remove ${userName(id)}`} onClick={() => onChange(to.filter((x) => x !== id))}>×</button>
          </span>
        ))}
      </span>
      <input type="text" class="recipient-input" aria-label="Direct message recipients" placeholder={to.length === 0 ? 'Add one or more users' : 'Add another user'}
        value={q} role="combobox" aria-expanded={options.length > 0} aria-controls="dm-recipient-options" aria-autocomplete="list"
        onInput={(e) => setQ((e.target as HTMLInputElement).value)}
        onKeyDown={(e) => {
          if ((e.key === 'Enter' || e.key === 'Tab') && options[active]) { e.preventDefault(); add(options[active].user_id); }
          if (e.key === 'ArrowDown') { e.preventDefault(); setActive(Math.min(active + 1, options.length - 1)); }
          if (e.key === 'ArrowUp') { e.preventDefault(); setActive(Math.max(active - 1, 0)); }
          if (e.key === 'Backspace' && q === '' && to.length > 0) onChange(to.slice(0, -1));
        }} />
      {options.length > 0 && (
        <ul class="typeahead" id="dm-recipient-options" role="listbox">
          {options.map((u, i) => (
            <li key={u.user_id} role="option" aria-selected={i === active} class={i === active ? 'active' : ''}
              onMouseDown={(e) => { e.preventDefault(); add(u.user_id); }}>
              {u.full_name} <span class="muted">{u.delivery_email ?? u.email}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The compose box; it re-renders with its own state, not with every new message row. */
export const Compose = memo(ComposeView);

function ComposeView({ narrow }: { narrow: Narrow }) {
  const open = composeOpen.value;
  const target = composeTarget.value;
  const content = composeContent.value;
  const area = useRef<HTMLTextAreaElement>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const [preview, setPreview] = useState<string | undefined>(undefined);
  const [error, setError] = useState('');
  const [sending, setSending] = useState(false);
  const [sugg, setSugg] = useState<{ list: Suggestion[]; start: number; active: number } | undefined>(undefined);
  const [dragging, setDragging] = useState(false);

  useSignalEffect(() => {
    if (composeFocus.value > 0) {
      setTimeout(() => {
        const t = composeTarget.peek();
        const sel = t.type === 'stream' && t.streamId !== undefined && t.topic === '' ? '.compose-topic' : t.type === 'private' && t.to.length === 0 ? '.recipient-input' : 'textarea.compose-textarea';
        document.querySelector<HTMLElement>(sel)?.focus();
      }, 0);
    }
  });
  useEffect(() => { if (open) loadEmojiData(); }, [open]);

  if (!open) {
    return (
      <div class="compose-closed">
        <button type="button" class="compose-start" onClick={() => openCompose(targetFor(narrow))}>
          {target.type === 'stream' && target.streamId !== undefined ? `Message #${subs.value.get(target.streamId)?.name ?? ''}${target.topic ? ` > ${target.topic}` : ''}` : 'Start new conversation'}
        </button>
        <button type="button" onClick={() => openCompose({ type: 'private', to: target.type === 'private' ? target.to : [] })}>New direct message</button>
      </div>
    );
  }

  const setContent = (s: string) => { composeContent.value = s; };
  /** Replaces text[start, end) and puts the cursor after the insertion, at once (typing may follow). */
  const replaceRange = (start: number, end: number, text: string) => {
    const el = area.current;
    const cur = el?.value ?? composeContent.peek();
    const next = cur.slice(0, start) + text + cur.slice(end);
    if (el !== null) {
      el.value = next;
      el.focus();
      el.setSelectionRange(start + text.length, start + text.length);
    }
    setContent(next);
  };
  const insertAtCursor = (text: string) => {
    const el = area.current;
    const len = (el?.value ?? composeContent.peek()).length;
    replaceRange(el?.selectionStart ?? len, el?.selectionEnd ?? len, text);
  };

  const uploadFiles = async (files: Iterable<File>) => {
    const max = Number(realm.value.max_file_upload_size_mib ?? 25);
    for (const file of files) {
      if (max === 0) { setError('File and image uploads are disabled on this server.'); return; }
      if (file.size > max * 1024 * 1024) { setError(`${file.name} is larger than the ${max} MiB limit.`); continue; }
      const clean = file.name.replace(/[[\]]/g, '');
      const placeholder = `[Uploading ${clean}…]()`;
      insertAtCursor(`${placeholder}\n`);
      const form = new FormData();
      form.append('file', file, file.name);
      try {
        const res = await upload<{ url?: string; uri?: string }>('user_uploads', form);
        const url = res.url ?? res.uri ?? '';
        const link = `[${clean}](${url})`;
        const cur = composeContent.peek();
        setContent(cur.includes(placeholder) ? cur.replace(placeholder, link) : `${cur}${link}`);
      } catch (e) {
        setContent(composeContent.peek().replace(`${placeholder}\n`, '').replace(placeholder, ''));
        setError(e instanceof Error ? e.message : String(e));
      }
    }
  };

  const send = async () => {
    if (sending) return;
    const text = composeContent.peek();
    if (text.trim() === '') return;
    const t = composeTarget.peek();
    if (!valid(t)) { setError(t.type === 'stream' ? 'Choose a channel.' : 'Choose at least one recipient.'); return; }
    if (t.type === 'stream' && t.topic.trim() === '' && realm.value.realm_mandatory_topics === true) { setError('Topics are required in this organization.'); return; }
    setSending(true);
    setError('');
    try {
      await sendMessage(t, text);
      typingStop();
      const draft = composeDraftId.peek();
      if (draft !== undefined) void del(`drafts/${draft}`).catch(() => undefined);
      composeDraftId.value = undefined;
      setContent('');
      setPreview(undefined);
      const inView = targetFor(narrow);
      if (JSON.stringify(inView) !== JSON.stringify(t) && userSettings.value.web_navigate_to_sent_message !== false && narrow.length > 0) {
        goNarrow(t.type === 'stream'
          ? [{ operator: 'channel', operand: String(t.streamId) }, { operator: 'topic', operand: t.topic }]
          : [{ operator: 'dm', operand: t.to.join(',') }]);
      }
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    } finally {
      setSending(false);
    }
  };

  const refreshSuggestions = (text: string, cursor: number) => {
    const tok = tokenAt(text, cursor);
    if (tok === undefined) { setSugg(undefined); return; }
    const list = suggestions(tok);
    setSugg(list.length === 0 ? undefined : { list, start: tok.start, active: 0 });
  };
  const accept = (s: Suggestion) => {
    const el = area.current;
    const pos = el?.selectionStart ?? composeContent.peek().length;
    replaceRange(sugg?.start ?? pos, pos, s.insert);
    setSugg(undefined);
  };

  const onKeyDown = (e: KeyboardEvent) => {
    if (sugg !== undefined) {
      if (e.key === 'ArrowDown') { e.preventDefault(); setSugg({ ...sugg, active: (sugg.active + 1) % sugg.list.length }); return; }
      if (e.key === 'ArrowUp') { e.preventDefault(); setSugg({ ...sugg, active: (sugg.active - 1 + sugg.list.length) % sugg.list.length }); return; }
      if (e.key === 'Enter' || e.key === 'Tab') {
        const s = sugg.list[sugg.active];
        if (s !== undefined) { e.preventDefault(); accept(s); return; }
      }
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); setSugg(undefined); return; }
    }
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); closeCompose(); return; }
    if (e.key === 'Enter') {
      const enterSends = userSettings.value.enter_sends === true;
      if ((enterSends && !e.shiftKey && !e.ctrlKey && !e.altKey) || (!enterSends && (e.ctrlKey || e.metaKey))) {
        e.preventDefault();
        void send();
      }
    }
  };

  const togglePreview = async () => {
    if (preview !== undefined) { setPreview(undefined); return; }
    try {
      const res = await post<{ rendered: string }>('messages/render', { content: composeContent.peek() || ' ' });
      setPreview(res.rendered);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };

  const topicOptions = target.type === 'stream' && target.streamId !== undefined ? [...(topics.value.get(target.streamId)?.keys() ?? [])] : [];
  const enterSends = userSettings.value.enter_sends === true;
  const maxLen = Number(realm.value.max_message_length ?? 10000);

  return (
    <form class={`compose${dragging ? ' dragging' : ''}`} aria-label="Compose message" onSubmit={(e) => { e.preventDefault(); void send(); }}
      onDragOver={(e) => { if (e.dataTransfer?.types.includes('Files')) { e.preventDefault(); setDragging(true); } }}
      onDragLeave={() => setDragging(false)}
      onDrop={(e) => { if (e.dataTransfer?.files.length) { e.preventDefault(); setDragging(false); void uploadFiles(e.dataTransfer.files); } }}>
      <div class="compose-target">
        <div class="segmented" role="group" aria-label="Message type">
          <button type="button" aria-pressed={target.type === 'stream'} onClick={() => { composeTarget.value = { type: 'stream', streamId: undefined, topic: '' }; }}>Channel</button>
          <button type="button" aria-pressed={target.type === 'private'} onClick={() => { composeTarget.value = { type: 'private', to: [] }; }}>Direct</button>
        </div>
        {target.type === 'stream' ? (
          <>
            <select class="compose-channel" aria-label="Channel" value={target.streamId === undefined ? '' : String(target.streamId)}
              onChange={(e) => { const v = (e.target as HTMLSelectElement).value; composeTarget.value = { ...target, streamId: v === '' ? undefined : Number(v) }; }}>
              <option value="">Choose a channel</option>
              {[...subs.value.values()].sort((a, b) => a.name.localeCompare(b.name)).map((s) => <option key={s.stream_id} value={String(s.stream_id)}>#{s.name}</option>)}
            </select>
            <span class="topic-separator" aria-hidden="true">›</span>
            <input class="compose-topic" type="text" aria-label="Topic" placeholder={String(realm.value.realm_empty_topic_display_name ?? 'Topic')}
              maxLength={Number(realm.value.max_topic_length ?? 60)} value={target.topic} list="compose-topics"
              onInput={(e) => { composeTarget.value = { ...target, topic: (e.target as HTMLInputElement).value }; }}
              onKeyDown={(e) => { if (e.key === 'Enter') { e.preventDefault(); area.current?.focus(); } if (e.key === 'Escape') { e.stopPropagation(); closeCompose(); } }} />
            <datalist id="compose-topics">{topicOptions.map((t) => <option key={t} value={t} />)}</datalist>
          </>
        ) : (
          <Recipients to={target.to.filter((id) => id !== me.value || target.to.length === 1)} onChange={(to) => { composeTarget.value = { type: 'private', to }; }} />
        )}
        <button type="button" class="icon-button compose-close" aria-label="Close compose box (saves a draft)" title="Close (Esc)" onClick={closeCompose}><Icon name="close" /></button>
      </div>
      {preview !== undefined ? (
        <SafeHtml class="compose-preview rendered_markdown" html={preview} />
      ) : (
        <div class="compose-area">
          <textarea ref={area} class="compose-textarea" aria-label="Message" placeholder="Write a message" value={content} maxLength={maxLen}
            rows={3} onKeyDown={onKeyDown}
            onInput={(e) => {
              const el = e.target as HTMLTextAreaElement;
              setContent(el.value);
              typingActivity(composeTarget.peek());
              refreshSuggestions(el.value, el.selectionStart);
            }}
            onBlur={() => setTimeout(() => setSugg(undefined), 150)}
            onPaste={(e) => {
              const files = e.clipboardData?.files;
              if (files && files.length > 0) { e.preventDefault(); void uploadFiles(files); }
            }} />
          {sugg !== undefined && (
            <ul class="typeahead compose-typeahead" role="listbox" aria-label="Suggestions">
              {sugg.list.map((s, i) => (
                <li key={s.key} role="option" aria-selected={i === sugg.active} class={i === sugg.active ? 'active' : ''}
                  onMouseDown={(e) => { e.preventDefault(); accept(s); }}>
                  <span>{s.label}</span>{s.detail && <span class="muted"> {s.detail}</span>}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {error && <p class="error" role="alert">{error}</p>}
      <div class="compose-controls">
        <input ref={fileInput} type="file" multiple class="sr-only" tabIndex={-1} aria-hidden="true"
          onChange={(e) => { const f = (e.target as HTMLInputElement).files; if (f) void uploadFiles([...f]); (e.target as HTMLInputElement).value = ''; }} />
        <button type="button" class="icon-button" title="Upload files" aria-label="Upload files" onClick={() => fileInput.current?.click()}><Icon name="clip" /></button>
        <button type="button" class="icon-button" aria-pressed={preview !== undefined} title="Preview" aria-label="Preview" onClick={() => void togglePreview()}><Icon name="eye" /></button>
        <span class="muted compose-hint">{enterSends ? 'Enter to send, Shift+Enter for a new line' : 'Ctrl+Enter to send'}</span>
        <button type="submit" class="primary send" disabled={sending || content.trim() === ''}>Send</button>
      </div>
    </form>
  );
}
