//! Sealing members' credential values: AES-256-GCM (ring, the crypto
//! library rustls and sqlx already build) under keys derived from
//! `credentials.keys`. The first key seals; a row names its key by id, so
//! after a rotation (a new key put first, the old kept) old rows still open
//! and are sealed anew with the first key when next set.

use std::sync::Arc;

use base64::{Engine, engine::general_purpose::STANDARD};
use ring::{
    aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey},
    hkdf,
    rand::{SecureRandom, SystemRandom},
};
use sha2::{Digest, Sha256};

use super::{CredentialRepo, SealedRow, Store, StoreError};

/// Domain separation of the key derivation and the key id.
const KEY_SALT: &[u8] = b"teamgate member credentials v1";

/// The store's credential rows behind the keys: values go in and come out
/// in the clear only here.
#[derive(Clone)]
pub struct Vault {
    store: Store,
    /// (key id, key), the sealing key first.
    keys: Arc<[(String, LessSafeKey)]>,
    random: SystemRandom,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault")
            .field("keys", &self.keys.len())
            .finish()
    }
}

/// The id naming a key: a digest of it, which tells nothing of the key.
fn key_id(material: &str) -> String {
    let digest = Sha256::new()
        .chain_update(KEY_SALT)
        .chain_update(b"\0id\0")
        .chain_update(material.as_bytes())
        .finalize();
    hex::encode(&digest[..8])
}

/// An AES-256 key derived with HKDF-SHA256 from the configured material
/// (any string of 32 characters or more).
fn derive(material: &str) -> LessSafeKey {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, KEY_SALT).extract(material.as_bytes());
    let okm = prk
        .expand(&[b"aes-256-gcm"], &AES_256_GCM)
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    LessSafeKey::new(UnboundKey::from(okm))
}

/// Binds a sealed value to its owner and slot.
fn aad(owner: &str, slot: &str) -> Vec<u8> {
    [owner.as_bytes(), b"\0", slot.as_bytes()].concat()
}

impl Vault {
    /// A vault over `store` with `keys` (the first seals). With no key,
    /// nothing can be set or read.
    pub fn new(store: Store, keys: &[&str]) -> Self {
        let keys: Vec<_> = keys.iter().map(|k| (key_id(k), derive(k))).collect();
        Self {
            store,
            keys: keys.into(),
            random: SystemRandom::new(),
        }
    }

    /// Seals `value` with the first key and stores it as `owner`'s `slot`.
    pub async fn set(&self, owner: &str, slot: &str, value: &str) -> Result<(), StoreError> {
        let (id, key) = self.keys.first().ok_or(StoreError::NoCredentialKey)?;
        let mut nonce = [0u8; NONCE_LEN];
        self.random
            .fill(&mut nonce)
            .map_err(|_| StoreError::Sealing("no randomness for a nonce"))?;
        let mut sealed = value.as_bytes().to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad(owner, slot)),
            &mut sealed,
        )
        .map_err(|_| StoreError::Sealing("the value cannot be sealed"))?;
        let row = SealedRow {
            key_id: id.clone(),
            nonce: STANDARD.encode(nonce),
            ciphertext: STANDARD.encode(&sealed),
            updated_at: self.store.now_ms(),
        };
        self.store.put_credential(owner, slot, &row).await
    }

    /// `owner`'s value of `slot`, opened; `None` when they set none.
    pub async fn get(&self, owner: &str, slot: &str) -> Result<Option<String>, StoreError> {
        let Some(row) = self.store.credential(owner, slot).await? else {
            return Ok(None);
        };
        let corrupt = |why: &str| StoreError::Corrupt(format!("credential {slot:?}: {why}"));
        let (_, key) = (self.keys.iter())
            .find(|(id, _)| *id == row.key_id)
            .ok_or_else(|| corrupt("sealed with a key no longer in credentials.keys"))?;
        let nonce: [u8; NONCE_LEN] = STANDARD
            .decode(&row.nonce)
            .ok()
            .and_then(|n| n.try_into().ok())
            .ok_or_else(|| corrupt("bad nonce"))?;
        let mut sealed = STANDARD
            .decode(&row.ciphertext)
            .map_err(|_| corrupt("bad ciphertext"))?;
        let opened = key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(owner, slot)),
                &mut sealed,
            )
            .map_err(|_| corrupt("does not open (altered, or not this member's)"))?;
        String::from_utf8(opened.to_vec())
            .map(Some)
            .map_err(|_| corrupt("not text"))
    }

    pub async fn delete(&self, owner: &str, slot: &str) -> Result<bool, StoreError> {
        self.store.delete_credential(owner, slot).await
    }

    /// Up to `limit` owners of a value of `slot`, most recently set first.
    pub async fn holders(&self, slot: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        self.store.credential_owners(slot, limit).await
    }

    /// The slots `owner` has set and when, ordered by slot.
    pub async fn slots(&self, owner: &str) -> Result<Vec<(String, i64)>, StoreError> {
        self.store.credential_slots(owner).await
    }
}
