//! Where the cluster's scheduler listens (`--engine ballista://HOST:PORT`): what the input
//! holds once the flag is read, before anything talks to the cluster.

/// Where the scheduler listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remote {
    pub host: String,
    pub port: u16,
}

/// Ballista's default scheduler port.
pub const DEFAULT_PORT: u16 = 50050;

impl std::fmt::Display for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "ballista://{}:{}", self.host, self.port)
    }
}

impl Remote {
    /// Parses `ballista://HOST[:PORT]` (or `df://`, Ballista's own scheme).
    pub fn parse(text: &str) -> Result<Remote, String> {
        let rest = text
            .strip_prefix("ballista://")
            .or_else(|| text.strip_prefix("df://"))
            .ok_or_else(|| format!("'{text}' is not an engine: expected ballista://HOST:PORT"))?;
        let rest = rest.trim_end_matches('/');
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) => {
                (host, port.parse().map_err(|_| format!("'{port}' is not a port in '{text}'"))?)
            }
            None => (rest, DEFAULT_PORT),
        };
        if host.is_empty() {
            return Err(format!("'{text}' names no host"));
        }
        Ok(Remote { host: host.to_string(), port })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_urls_name_a_host_and_a_port() {
        let at = |host: &str, port| Ok(Remote { host: host.into(), port });
        assert_eq!(Remote::parse("ballista://127.0.0.1:50050"), at("127.0.0.1", 50050));
        assert_eq!(Remote::parse("df://cluster.internal"), at("cluster.internal", DEFAULT_PORT));
        assert_eq!(Remote::parse("ballista://h:7/"), at("h", 7));
        for bad in ["127.0.0.1:50050", "http://h:1", "ballista://", "ballista://h:port", "ballista://:5"] {
            assert!(Remote::parse(bad).is_err(), "{bad}");
        }
    }
}
