//! How to reach Redis: the URL and password every service with state reads the same way, with
//! the password kept out of logs.

/// `url` with the password of its user information replaced by `***` (for logs).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split_once(':').map_or(user_info, |(u, _)| u);
            format!("{scheme}://{user}:***@{host}{}", &rest[authority_end..])
        }
        None => url.to_owned(),
    }
}

/// How to reach Redis.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://host:port/db`, maybe with a user (and password) in it.
    pub url: String,
    /// A password that replaces the URL's (read from a file or the environment).
    pub password: Option<String>,
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redact_url(&self.url))
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

impl RedisConfig {
    /// The client for this configuration (no connection yet).
    pub fn client(&self) -> Result<redis::Client, String> {
        use redis::IntoConnectionInfo;
        let mut info = self
            .url
            .as_str()
            .into_connection_info()
            .map_err(|e| format!("bad Redis URL {}: {e}", redact_url(&self.url)))?;
        if let Some(password) = &self.password {
            info.redis.password = Some(password.clone());
        }
        redis::Client::open(info).map_err(|e| e.to_string())
    }
}
