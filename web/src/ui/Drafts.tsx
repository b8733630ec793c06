import { del } from '../api';
import { composeDraftId, openCompose } from '../compose';
import { closeOverlay } from '../route';
import { channelName, drafts, topicDisplay, userName } from '../store';
import { Dialog } from './Dialog';
import { formatDate, formatTime } from './util';

export function DraftsOverlay() {
  const list = [...drafts.value.values()].sort((a, b) => (b.timestamp ?? 0) - (a.timestamp ?? 0));
  const restore = (id: number) => {
    const d = drafts.value.get(id);
    if (d === undefined) return;
    closeOverlay();
    composeDraftId.value = id;
    openCompose(d.type === 'private' ? { type: 'private', to: d.to } : { type: 'stream', streamId: d.to[0], topic: d.topic }, d.content);
  };
  return (
    <Dialog title="Drafts" onClose={closeOverlay} wide>
      {list.length === 0 && <p class="muted">No drafts. Closing the compose box with text in it saves one.</p>}
      <ul class="plain-list drafts-list">
        {list.map((d) => (
          <li key={d.id} class="draft">
            <div class="row spread">
              <strong>{d.type === 'private' ? `To ${d.to.map(userName).join(', ')}` : `#${channelName(d.to[0])} > ${topicDisplay(d.topic)}`}</strong>
              <span class="muted">{d.timestamp === undefined ? '' : `${formatDate(d.timestamp)} ${formatTime(d.timestamp)}`}</span>
            </div>
            <p class="draft-content">{d.content}</p>
            <div class="row">
              <button type="button" class="primary" onClick={() => restore(d.id ?? 0)}>Restore</button>
              <button type="button" onClick={() => void del(`drafts/${d.id ?? 0}`)}>Delete</button>
            </div>
          </li>
        ))}
      </ul>
    </Dialog>
  );
}
