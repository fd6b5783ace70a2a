//! The skills of a files source's tree (SEP-2640): each folder beneath the
//! root holding a `SKILL.md` is a skill, named by that file's front matter;
//! its files are every file beneath the folder the source serves (the
//! walker's rules: not hidden or ignored unless included, no links, an
//! allowed extension, under `max_file_bytes`), nested skills' included, as
//! the extension asks. Each is `skill://<source>/<path>`, with the SHA-256
//! digest and size of its bytes; digests are kept by size and modification
//! time, so a listing hashes only the files that changed since.

use std::{
    collections::{BTreeMap, HashMap},
    io::Read,
    path::Path,
    sync::{Arc, Mutex},
    time::SystemTime,
};

use gray_matter::{Matter, engine::YAML};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use sha2::{Digest, Sha256};

use super::{FilesSource, beneath, extension_allowed, search};
use crate::protocol::{Skill, SkillFrontmatter, SkillResource, SkillResources};

pub(super) const SKILL_MD: &str = "SKILL.md";
/// The extension's limits per skill: files, and bytes of them all.
const MAX_FILES: usize = 512;
const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Most files one walk looks at, and most skills one source serves.
const MAX_WALKED: usize = 20_000;
const MAX_SKILLS: usize = 500;
/// What a path keeps unescaped in a URI: unreserved characters and `/`.
const KEPT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// Skill folders (relative to the root, `/`-separated) with the paths of
/// the files the source serves beneath each, in walk order.
pub(super) type Folders = BTreeMap<String, Vec<String>>;

/// Why a skill, or a file of it, is not served.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unserved {
    #[error("{0} files, over the extension's {MAX_FILES}")]
    TooManyFiles(usize),
    #[error("over the extension's {MAX_BYTES} bytes")]
    TooLarge,
    #[error("{0} cannot be opened (changed since the walk?)")]
    Unopened(String),
    #[error("{path}: {error}")]
    Unreadable { path: String, error: std::io::Error },
    #[error("{path} is larger than max_file_bytes ({cap})")]
    OverCap { path: String, cap: u64 },
    #[error("{path}: {why}")]
    FrontMatter { path: String, why: &'static str },
    #[error("{path}: front matter: {error}")]
    Yaml { path: String, error: String },
    #[error("{0}")]
    Invalid(String),
}

/// A digest with the size and modification time of the bytes it covers.
type Kept = (u64, SystemTime, String);

#[derive(Clone)]
pub(super) struct Tree {
    pub(super) source: Arc<FilesSource>,
    digests: Arc<Mutex<HashMap<String, Kept>>>,
}

impl Tree {
    pub(super) fn new(source: Arc<FilesSource>) -> Self {
        Self {
            source,
            digests: Arc::default(),
        }
    }

    /// `skill://<source>/`: every URI of the source's skills starts so.
    pub(super) fn prefix(&self) -> String {
        format!("skill://{}/", self.source.config.name)
    }

    /// The URI of the file `path` (relative to the root).
    pub(super) fn uri(&self, path: &str) -> String {
        format!("{}{}", self.prefix(), utf8_percent_encode(path, KEPT))
    }

    /// The path `uri` names, unescaped; `None` for another source's URI.
    /// Not yet checked: `FilesSource::open` refuses what leads outside.
    pub(super) fn path_of(&self, uri: &str) -> Option<String> {
        let escaped = uri.strip_prefix(&self.prefix())?;
        let path = percent_decode_str(escaped).decode_utf8().ok()?;
        (!path.is_empty()).then(|| path.into_owned())
    }

    /// Every skill folder with its files: one walk under the source's rules.
    pub(super) fn folders(&self) -> Folders {
        let (root, config) = (&self.source.root, &self.source.config);
        let mut walker = search::walker(root, config);
        walker.sort_by_file_name(|a, b| a.cmp(b));
        let served = |entry: &ignore::DirEntry| {
            entry.file_type().is_some_and(|t| t.is_file())
                && extension_allowed(config, entry.path())
                && entry
                    .metadata()
                    .is_ok_and(|m| m.len() <= config.max_file_bytes)
        };
        let files: Vec<String> = (walker.build().flatten().take(MAX_WALKED))
            .filter(served)
            .filter_map(|e| Some(e.path().strip_prefix(root).ok()?.to_str()?.to_owned()))
            .collect();
        // A SKILL.md at the root names no folder: the skill path needs one.
        let mut folders: Folders = (files.iter())
            .filter_map(|path| path.strip_suffix(SKILL_MD)?.strip_suffix('/'))
            .take(MAX_SKILLS)
            .map(|folder| (folder.to_owned(), Vec::new()))
            .collect();
        for path in files {
            let mut at = path.as_str();
            while let Some((parent, _)) = at.rsplit_once('/') {
                if let Some(inside) = folders.get_mut(parent) {
                    inside.push(path.clone());
                }
                at = parent;
            }
        }
        folders
    }

    /// The skills the tree holds; one that breaks the extension's rules is
    /// left out, with a warning saying why.
    pub(super) fn skills(&self) -> Vec<Skill> {
        let folders = self.folders();
        let built = folders
            .iter()
            .map(|(folder, files)| (folder, self.skill(folder, files)));
        built
            .filter_map(|(folder, skill)| {
                skill
                    .inspect_err(|why| {
                        let source = &self.source.config.name;
                        tracing::warn!(%source, skill = %folder, "skill not served: {why}");
                    })
                    .ok()
            })
            .collect()
    }

    /// The skill in `folder` with its complete manifest, or why it is not
    /// served.
    pub(super) fn skill(&self, folder: &str, files: &[String]) -> Result<Skill, Unserved> {
        if files.len() > MAX_FILES {
            return Err(Unserved::TooManyFiles(files.len()));
        }
        let manifest = format!("{folder}/{SKILL_MD}");
        let frontmatter = self.front_matter(&manifest)?;
        let (mut resources, mut total) = (Vec::with_capacity(files.len()), 0);
        for path in files {
            let (size, digest) = self.digest(path)?;
            total += size;
            if total > MAX_BYTES {
                return Err(Unserved::TooLarge);
            }
            resources.push(SkillResource::new(self.uri(path), digest, size));
        }
        resources.sort_by(|a, b| a.uri.cmp(&b.uri));
        let files = SkillResources::Files(resources);
        let skill = Skill::new(self.uri(&manifest), frontmatter, files);
        (skill.validate()).map_err(|e| Unserved::Invalid(e.to_string()))?;
        Ok(skill)
    }

    /// The front matter of the `SKILL.md` at `path`, every field kept.
    pub(super) fn front_matter(&self, path: &str) -> Result<SkillFrontmatter, Unserved> {
        let (file, _) = self.opened(path)?;
        let bytes = self.bytes(path, file)?;
        let why = |why| Unserved::FrontMatter {
            path: path.to_owned(),
            why,
        };
        let text = String::from_utf8(bytes).map_err(|_| why("not UTF-8"))?;
        if !text.starts_with("---") {
            return Err(why("does not begin with --- front matter"));
        }
        let parsed = Matter::<YAML>::new().parse::<SkillFrontmatter>(&text);
        let parsed = parsed.map_err(|e| Unserved::Yaml {
            path: path.to_owned(),
            error: e.to_string(),
        })?;
        (parsed.data).ok_or_else(|| why("front matter needs `name` and `description`"))
    }

    /// The size and digest of the file at `path`, hashed again only when
    /// its size or modification time changed.
    fn digest(&self, path: &str) -> Result<(u64, String), Unserved> {
        let (file, size) = self.opened(path)?;
        let modified = file.metadata().and_then(|m| m.modified()).ok();
        let mut kept = self.digests.lock().expect("digests lock");
        if let (Some((was, at, digest)), Some(modified)) = (kept.get(path), modified)
            && (*was, *at) == (size, modified)
        {
            return Ok((size, digest.clone()));
        }
        drop(kept);
        let bytes = self.bytes(path, file)?;
        let (size, digest) = (bytes.len() as u64, sha256(&bytes));
        kept = self.digests.lock().expect("digests lock");
        if kept.len() >= MAX_WALKED {
            kept.clear();
        }
        if let Some(modified) = modified {
            kept.insert(path.to_owned(), (size, modified, digest.clone()));
        }
        Ok((size, digest))
    }

    /// The walked file at `path`, opened beneath the root (no links).
    fn opened(&self, path: &str) -> Result<(std::fs::File, u64), Unserved> {
        beneath::open(&self.source.root_fd, Path::new(path))
            .map_err(|_| Unserved::Unopened(path.to_owned()))
    }

    /// The bytes of `file` (at `path`), up to the source's `max_file_bytes`.
    pub(super) fn bytes(&self, path: &str, file: std::fs::File) -> Result<Vec<u8>, Unserved> {
        let cap = self.source.config.max_file_bytes;
        let mut bytes = Vec::new();
        let path = path.to_owned();
        if let Err(error) = file.take(cap + 1).read_to_end(&mut bytes) {
            return Err(Unserved::Unreadable { path, error });
        }
        if bytes.len() as u64 > cap {
            return Err(Unserved::OverCap { path, cap });
        }
        Ok(bytes)
    }
}

/// `sha256:` and the 64 lowercase hex digits of `bytes`' SHA-256.
pub(super) fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_the_extensions_form() {
        // SHA-256 of the empty string.
        assert_eq!(
            sha256(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
