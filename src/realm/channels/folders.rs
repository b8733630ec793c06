//! Channel folders (seed 4.19).

use super::*;
use crate::realm::ChannelChange;

impl Realm {
    // ---- channel folders (seed 4.19) ----------------------------------------

    pub(super) fn check_folder_name(
        &self,
        raw: &str,
        except: Option<FolderId>,
    ) -> ApiResult<String> {
        let name = raw.trim();
        if name.is_empty() {
            return Err(ApiError::bad_request("Channel folder name can't be empty."));
        }
        if name.chars().count() > MAX_FOLDER_NAME_LENGTH {
            return Err(ApiError::bad_request(format!(
                "name is too long (limit: {MAX_FOLDER_NAME_LENGTH} characters)"
            )));
        }
        if name.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "Invalid character in channel folder name, at position 1.",
            ));
        }
        let taken = self
            .folders
            .values()
            .any(|f| !f.is_archived && Some(f.id) != except && f.name.eq_ignore_ascii_case(name));
        if taken {
            return Err(ApiError::bad_request("Channel folder name already in use"));
        }
        Ok(name.to_owned())
    }

    pub(super) fn check_folder_description(raw: &str) -> ApiResult<String> {
        if raw.chars().count() > MAX_FOLDER_DESCRIPTION_LENGTH {
            return Err(ApiError::bad_request(format!(
                "description is too long (limit: {MAX_FOLDER_DESCRIPTION_LENGTH} characters)"
            )));
        }
        Ok(raw.trim().to_owned())
    }

    /// `POST /channel_folders/create`: administrators only; answers the new folder's id.
    pub fn decide_create_folder(
        &self,
        me: &User,
        q: CreateFolder,
        cx: &mut Cx,
    ) -> ApiResult<Decided<FolderId>> {
        self.require_admin(me)?;
        let name = self.check_folder_name(&q.name, None)?;
        let description = Self::check_folder_description(&q.description)?;
        let id = self.next_folder_id;
        let order = self
            .folders
            .values()
            .map(|f| f.order + 1)
            .max()
            .unwrap_or(1);
        Ok(Decided::new(
            vec![Change::Channel(ChannelChange::ChannelFolderCreated(
                ChannelFolder {
                    id,
                    name,
                    rendered_description: render_description(&description),
                    description,
                    order,
                    date_created: cx.now_secs(),
                    creator_id: Some(me.id),
                    is_archived: false,
                },
            ))],
            id,
        ))
    }

    /// `PATCH /channel_folders/{channel_folder_id}`: administrators only.
    pub fn decide_update_folder(
        &self,
        me: &User,
        q: UpdateFolder,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let UpdateFolder {
            id,
            name,
            description,
            is_archived,
        } = q;
        let f = u64::try_from(id)
            .ok()
            .and_then(|id| self.folders.get(&id))
            .ok_or_else(|| ApiError::bad_request("Invalid channel folder ID"))?;
        let mut changes = Vec::new();
        let upd = |update| {
            Change::Channel(ChannelChange::ChannelFolderUpdated {
                folder_id: f.id,
                update,
            })
        };
        if let Some(raw) = name {
            let name = self.check_folder_name(&raw, Some(f.id))?;
            if name != f.name {
                changes.push(upd(FolderUpdate::Name(name)));
            }
        }
        if let Some(raw) = description {
            let description = Self::check_folder_description(&raw)?;
            if description != f.description {
                changes.push(upd(FolderUpdate::Description {
                    rendered: render_description(&description),
                    description,
                }));
            }
        }
        if let Some(a) = is_archived {
            if a && !f.is_archived {
                let in_use = self
                    .channels
                    .values()
                    .any(|c| c.folder_id == Some(f.id) && !c.is_archived);
                if in_use {
                    return Err(ApiError::bad_request(
                        "You need to remove all the channels from this folder to archive it.",
                    ));
                }
            }
            if !a && f.is_archived {
                self.check_folder_name(&f.name, Some(f.id))?;
            }
            if a != f.is_archived {
                changes.push(upd(FolderUpdate::Archived(a)));
            }
        }
        Ok(Decided::changes(changes))
    }

    /// `PATCH /channel_folders` (seed 4.19): administrators only; every folder id,
    /// archived ones included, must be in `order`; duplicates and unknown ids pass.
    pub fn decide_reorder_folders(
        &self,
        me: &User,
        q: ReorderFolders,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let order = q.order;
        let all_present = self
            .folders
            .keys()
            .all(|id| order.iter().any(|o| u64::try_from(*o).ok() == Some(*id)));
        if !all_present {
            return Err(ApiError::bad_request("Invalid order mapping."));
        }
        Ok(Decided::changes(vec![Change::Channel(
            ChannelChange::ChannelFoldersReordered { order },
        )]))
    }
}
