//! Where the cluster's scheduler listens and how to prove this process may use it
//! (`--engine ballista://HOST:PORT?credentials=DIR`): what the input holds once the flag is
//! read, before anything talks to the cluster.

use std::path::PathBuf;

/// Where the scheduler listens, and with what this process connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remote {
    pub host: String,
    pub port: u16,
    pub access: Access,
}

/// How the client connects to the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Mutual TLS with the client certificate and key of the folder `dpstat cluster init` made
    /// (as this process resolves it).
    Credentials(PathBuf),
    /// Plain gRPC to a loopback cluster started with `--insecure-loopback` (`?insecure`).
    InsecureLoopback,
}

/// Ballista's default scheduler port.
pub const DEFAULT_PORT: u16 = 50050;

impl std::fmt::Display for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "ballista://{}:{}", self.host, self.port)
    }
}

impl Remote {
    /// Parses `ballista://HOST[:PORT]?credentials=DIR` or `ballista://HOST[:PORT]?insecure`
    /// (loopback hosts only); `df://`, Ballista's own scheme, is the same.
    pub fn parse(text: &str) -> Result<Remote, String> {
        let rest =
            text.strip_prefix("ballista://").or_else(|| text.strip_prefix("df://")).ok_or_else(|| {
                format!("'{text}' is not an engine: expected ballista://HOST:PORT?credentials=DIR")
            })?;
        let (address, query) = rest.split_once('?').unwrap_or((rest, ""));
        let address = address.trim_end_matches('/');
        let (host, port) = match address.rsplit_once(':') {
            Some((host, port)) => {
                (host, port.parse().map_err(|_| format!("'{port}' is not a port in '{text}'"))?)
            }
            None => (address, DEFAULT_PORT),
        };
        if host.is_empty() {
            return Err(format!("'{text}' names no host"));
        }
        let access = match query.split_once('=') {
            Some(("credentials", dir)) if !dir.is_empty() => {
                Access::Credentials(std::path::absolute(dir).map_err(|e| format!("credentials={dir}: {e}"))?)
            }
            None if query == "insecure" => {
                if !super::tls::is_loopback(host) {
                    return Err(format!(
                        "?insecure is for a loopback cluster only; {host} needs ?credentials=DIR"
                    ));
                }
                Access::InsecureLoopback
            }
            _ if query.is_empty() => {
                return Err(format!(
                    "'{text}' names no credentials: add ?credentials=DIR (the folder `dpstat cluster init` made), or ?insecure for a loopback cluster started with --insecure-loopback"
                ))
            }
            _ => return Err(format!("'?{query}' in '{text}': expected ?credentials=DIR or ?insecure")),
        };
        Ok(Remote { host: host.to_string(), port, access })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_urls_name_a_host_a_port_and_credentials() {
        let at = |host: &str, port, access| Ok(Remote { host: host.into(), port, access });
        let creds = Access::Credentials("/etc/dpstat/cluster".into());
        assert_eq!(
            Remote::parse("ballista://127.0.0.1:50050?credentials=/etc/dpstat/cluster"),
            at("127.0.0.1", 50050, creds.clone())
        );
        assert_eq!(
            Remote::parse("df://cluster.internal?credentials=/etc/dpstat/cluster"),
            at("cluster.internal", DEFAULT_PORT, creds.clone())
        );
        assert_eq!(Remote::parse("ballista://h:7/?credentials=/etc/dpstat/cluster"), at("h", 7, creds));
        assert_eq!(
            Remote::parse("ballista://127.0.0.1:7?insecure"),
            at("127.0.0.1", 7, Access::InsecureLoopback)
        );
        let relative = Remote::parse("ballista://h:7?credentials=keys").unwrap();
        assert_eq!(relative.access, Access::Credentials(std::env::current_dir().unwrap().join("keys")));
        for bad in [
            "127.0.0.1:50050",
            "http://h:1",
            "ballista://",
            "ballista://h:port?insecure",
            "ballista://:5?insecure",
            "ballista://127.0.0.1:50050",
            "ballista://10.0.0.1:50050?insecure",
            "ballista://h:1?credentials=",
            "ballista://127.0.0.1:1?secure",
        ] {
            assert!(Remote::parse(bad).is_err(), "{bad}");
        }
    }
}
