import { readReceiptsEnabled } from './ReadReceipts';
import { useEffect, useState } from 'preact/hooks';
import { del, patch, post, upload } from '../api';
import { isAdmin, linkifiers, me, realm, realmEmoji, streams, users, userSettings, userStatus } from '../store';
import { closeOverlay } from '../route';
import { Dialog } from './Dialog';
import { Avatar } from './Avatar';

type Run = (p: Promise<unknown>, ok?: string) => void;

function useRunner(): [Run, string, string] {
  const [err, setErr] = useState('');
  const [msg, setMsg] = useState('');
  const run: Run = (p, ok = 'Saved.') => {
    setErr('');
    setMsg('');
    p.then(() => setMsg(ok)).catch((x: unknown) => setErr(x instanceof Error ? x.message : String(x)));
  };
  return [run, err, msg];
}

function Status({ err, msg }: { err: string; msg: string }) {
  return <>{err && <p class="error" role="alert">{err}</p>}{msg && <p class="ok" role="status">{msg}</p>}</>;
}

function Profile() {
  const u = users.value.get(me.value);
  const [name, setName] = useState(u?.full_name ?? '');
  const [status, setStatus] = useState(userStatus.value.get(me.value)?.status_text ?? '');
  const [oldPw, setOld] = useState('');
  const [newPw, setNew] = useState('');
  const [run, err, msg] = useRunner();
  return (
    <div class="stack">
      <form class="stack" onSubmit={(e) => { e.preventDefault(); run(patch('settings', { full_name: name })); }}>
        <label>Name <input type="text" value={name} maxLength={60} onInput={(e) => setName((e.target as HTMLInputElement).value)} /></label>
        <div class="row"><button type="submit" class="primary">Save name</button></div>
      </form>
      <form class="stack" onSubmit={(e) => { e.preventDefault(); run(post('users/me/status', { status_text: status }), 'Status saved.'); }}>
        <label>Status <input type="text" value={status} maxLength={60} placeholder="What are you up to?" onInput={(e) => setStatus((e.target as HTMLInputElement).value)} /></label>
        <div class="row">
          <button type="submit">Save status</button>
          <button type="button" onClick={() => { setStatus(''); run(post('users/me/status', { status_text: '', emoji_name: '' }), 'Status cleared.'); }}>Clear status</button>
        </div>
      </form>
      <div class="row avatar-row">
        <Avatar userId={me.value} size={64} cls="large" />
        <label class="button">Upload new avatar
          <input type="file" accept="image/*" class="sr-only" onChange={(e) => {
            const f = (e.target as HTMLInputElement).files?.[0];
            if (!f) return;
            const form = new FormData();
            form.append('file', f, f.name);
            run(upload('users/me/avatar', form), 'Avatar updated.');
          }} />
        </label>
        <button type="button" onClick={() => run(del('users/me/avatar'), 'Avatar removed.')}>Remove avatar</button>
      </div>
      <form class="stack" onSubmit={(e) => { e.preventDefault(); run(patch('settings', { old_password: oldPw, new_password: newPw }), 'Password changed.'); }}>
        <h3>Change password</h3>
        <label>Current password <input type="password" autoComplete="current-password" value={oldPw} onInput={(e) => setOld((e.target as HTMLInputElement).value)} /></label>
        <label>New password <input type="password" autoComplete="new-password" value={newPw} onInput={(e) => setNew((e.target as HTMLInputElement).value)} /></label>
        <div class="row"><button type="submit">Change password</button></div>
      </form>
      <Status err={err} msg={msg} />
    </div>
  );
}

function Toggle({ prop, label, run }: { prop: string; label: string; run: Run }) {
  const v = userSettings.value[prop] === true;
  return <label class="inline"><input type="checkbox" checked={v} onChange={() => run(patch('settings', { [prop]: !v }))} /> {label}</label>;
}

function Preferences() {
  const [run, err, msg] = useRunner();
  const scheme = Number(userSettings.value.color_scheme ?? 1);
  const home = userSettings.value.web_home_view;
  const homeView = home === 'recent_topics' || home === 'all_messages' ? home : 'inbox';
  return (
    <div class="stack">
      <label>Theme
        <select value={String(scheme)} onChange={(e) => run(patch('settings', { color_scheme: Number((e.target as HTMLSelectElement).value) }))}>
          <option value="1">Follow the system</option>
          <option value="2">Dark</option>
          <option value="3">Light</option>
        </select>
      </label>
      <label>Home view
        <select value={homeView} onChange={(e) => run(patch('settings', { web_home_view: (e.target as HTMLSelectElement).value }))}>
          <option value="inbox">Inbox</option>
          <option value="recent_topics">Recent conversations</option>
          <option value="all_messages">Combined feed</option>
        </select>
      </label>
      <Toggle prop="enter_sends" label="Enter sends a message (Shift+Enter for a new line)" run={run} />
      <Toggle prop="twenty_four_hour_time" label="24-hour time" run={run} />
      {readReceiptsEnabled() && <Toggle prop="send_read_receipts" label="Show others when I have read their messages" run={run} />}
      <Status err={err} msg={msg} />
    </div>
  );
}

function Notifications() {
  const [run, err, msg] = useRunner();
  const perm = typeof Notification === 'undefined' ? 'unsupported' : Notification.permission;
  return (
    <div class="stack">
      {perm !== 'granted' && perm !== 'unsupported' && (
        <button type="button" onClick={() => void Notification.requestPermission()}>Allow browser notifications</button>
      )}
      <Toggle prop="enable_desktop_notifications" label="Desktop notifications for direct messages and mentions" run={run} />
      <Toggle prop="enable_stream_desktop_notifications" label="Desktop notifications for all channel messages" run={run} />
      <Toggle prop="pm_content_in_desktop_notifications" label="Show message content in direct message notifications" run={run} />
      <Toggle prop="wildcard_mentions_notify" label="Notify on @all / @channel / @topic" run={run} />
      <Toggle prop="enable_sounds" label="Audible notifications" run={run} />
      <Toggle prop="enable_offline_email_notifications" label="Email notifications when offline" run={run} />
      <Status err={err} msg={msg} />
    </div>
  );
}

const ROLES: [number, string][] = [[100, 'Owner'], [200, 'Administrator'], [300, 'Moderator'], [400, 'Member'], [600, 'Guest']];

function Organization() {
  const [run, err, msg] = useRunner();
  const [name, setName] = useState(String(realm.value.realm_name ?? ''));
  const [desc, setDesc] = useState(String(realm.value.realm_description ?? ''));
  const [invite, setInvite] = useState('');
  const [pattern, setPattern] = useState('');
  const [template, setTemplate] = useState('');
  const [emojiName, setEmojiName] = useState('');
  const defaults = (realm.value.realm_default_streams as number[] | undefined) ?? [];
  return (
    <div class="stack">
      <form class="stack" onSubmit={(e) => { e.preventDefault(); run(patch('realm', { name, description: desc })); }}>
        <h3>Organization profile</h3>
        <label>Name <input type="text" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} /></label>
        <label>Description <textarea rows={3} value={desc} onInput={(e) => setDesc((e.target as HTMLTextAreaElement).value)} /></label>
        <div class="row"><button type="submit" class="primary">Save</button></div>
      </form>
      <form class="stack" onSubmit={(e) => {
        e.preventDefault();
        run(post('invites', { invitee_emails: invite, stream_ids: defaults.length > 0 ? defaults : [...streams.value.keys()].slice(0, 1), invite_expires_in_minutes: 10080, invite_as: 400 }), 'Invitation sent.');
      }}>
        <h3>Invite users</h3>
        <label>Email addresses (comma-separated) <input type="text" value={invite} onInput={(e) => setInvite((e.target as HTMLInputElement).value)} /></label>
        <div class="row"><button type="submit">Invite</button></div>
      </form>
      <h3>Users</h3>
      <table class="admin-users">
        <thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Account</th></tr></thead>
        <tbody>
          {[...users.value.values()].filter((u) => !u.is_bot).sort((a, b) => a.full_name.localeCompare(b.full_name)).map((u) => (
            <tr key={u.user_id}>
              <td>{u.full_name}</td>
              <td>{u.delivery_email ?? u.email}</td>
              <td>
                <select aria-label={`Role of ${u.full_name}`} value={String(u.role)} disabled={u.user_id === me.value}
                  onChange={(e) => run(patch(`users/${u.user_id}`, { role: Number((e.target as HTMLSelectElement).value) }))}>
                  {ROLES.map(([v, l]) => <option key={v} value={String(v)}>{l}</option>)}
                </select>
              </td>
              <td>
                {u.user_id === me.value ? null : u.is_active
                  ? <button type="button" onClick={() => { if (confirm(`Deactivate ${u.full_name}?`)) run(del(`users/${u.user_id}`), 'Deactivated.'); }}>Deactivate</button>
                  : <button type="button" onClick={() => run(post(`users/${u.user_id}/reactivate`), 'Reactivated.')}>Reactivate</button>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Linkifiers</h3>
      <ul class="plain-list">
        {linkifiers.value.map((l) => (
          <li key={l.id} class="row spread"><code>{l.pattern}</code> → <code>{l.url_template}</code>
            <button type="button" onClick={() => run(del(`realm/filters/${l.id}`), 'Removed.')}>Remove</button></li>
        ))}
      </ul>
      <form class="row" onSubmit={(e) => { e.preventDefault(); run(post('realm/filters', { pattern, url_template: template }), 'Added.'); }}>
        <input type="text" aria-label="Linkifier pattern" placeholder="#(?P<id>[0-9]+)" value={pattern} onInput={(e) => setPattern((e.target as HTMLInputElement).value)} />
        <input type="text" aria-label="URL template" placeholder="https://example.com/issues/{id}" value={template} onInput={(e) => setTemplate((e.target as HTMLInputElement).value)} />
        <button type="submit">Add linkifier</button>
      </form>
      <h3>Custom emoji</h3>
      <ul class="plain-list emoji-admin">
        {Object.values(realmEmoji.value).filter((x) => !x.deactivated).map((x) => (
          <li key={x.id} class="row"><img class="emoji" src={x.source_url} alt="" /> :{x.name}:
            <button type="button" onClick={() => run(del(`realm/emoji/${encodeURIComponent(x.name)}`), 'Removed.')}>Remove</button></li>
        ))}
      </ul>
      <div class="row">
        <input type="text" aria-label="Emoji name" placeholder="emoji_name" value={emojiName} onInput={(e) => setEmojiName((e.target as HTMLInputElement).value)} />
        <label class="button">Upload image
          <input type="file" accept="image/*" class="sr-only" onChange={(e) => {
            const f = (e.target as HTMLInputElement).files?.[0];
            if (!f || emojiName === '') return;
            const form = new FormData();
            form.append('file', f, f.name);
            run(upload(`realm/emoji/${encodeURIComponent(emojiName)}`, form), 'Emoji added.');
          }} />
        </label>
      </div>
      <Status err={err} msg={msg} />
    </div>
  );
}

export function SettingsOverlay({ initial }: { initial: string }) {
  const tabs: [string, string][] = [['profile', 'Profile'], ['preferences', 'Preferences'], ['notifications', 'Notifications']];
  if (isAdmin()) tabs.push(['organization', 'Organization']);
  const known = (k: string): boolean => tabs.some(([t]) => t === k);
  const [tab, setTab] = useState(known(initial) ? initial : 'profile');
  // A link to another section (`#settings/preferences`) while settings is open.
  useEffect(() => { if (known(initial)) setTab(initial); }, [initial]);
  return (
    <Dialog title="Settings" onClose={closeOverlay} wide>
      <div class="tabs" role="tablist" aria-label="Settings sections">
        {tabs.map(([k, l]) => (
          <button type="button" role="tab" id={`tab-${k}`} key={k} aria-selected={tab === k} aria-controls={`panel-${k}`} onClick={() => setTab(k)}>{l}</button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} class="tab-panel">
        {tab === 'profile' && <Profile />}
        {tab === 'preferences' && <Preferences />}
        {tab === 'notifications' && <Notifications />}
        {tab === 'organization' && <Organization />}
      </div>
    </Dialog>
  );
}
