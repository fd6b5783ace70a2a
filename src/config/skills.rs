//! Skills (SEP-2640; issue 66 part 4) in the configuration: `skills = true`
//! on a files or docs source serves each folder holding a `SKILL.md` as a skill.
//! A skill's files are those the source offers, so its `extensions` must
//! offer `md`, or no `SKILL.md` would ever be served.

/// A files or docs source with `skills` offers `.md` files.
pub(super) fn validate(config: &super::Config) -> Result<(), super::ConfigError> {
    let sources = &config.sources;
    let files =
        (sources.files.iter().enumerate()).map(|(i, s)| ("files", i, s.skills, &s.extensions));
    let docs = (sources.docs.iter().enumerate()).map(|(i, s)| ("docs", i, s.skills, &s.extensions));
    for (kind, i, _, extensions) in files.chain(docs).filter(|s| s.2) {
        if !extensions.iter().any(|e| e == "md") {
            return Err(super::ConfigError::Invalid {
                key: format!("sources.{kind}[{i}].extensions"),
                why: "`skills = true` needs \"md\" among the extensions: a skill is a folder \
                      with a SKILL.md"
                    .into(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skills_source_must_offer_markdown() {
        let mut config = super::super::ConfigSources::files_only(Vec::new())
            .load()
            .unwrap();
        config.sources.files = vec![
            serde_json::from_value(serde_json::json!({
                "name": "s", "root": "/", "extensions": ["sh"], "skills": true,
            }))
            .unwrap(),
        ];
        let refused = validate(&config).unwrap_err().to_string();
        assert!(refused.contains("sources.files[0].extensions"), "{refused}");
        config.sources.files[0].extensions.push("md".into());
        assert!(validate(&config).is_ok());
    }
}
