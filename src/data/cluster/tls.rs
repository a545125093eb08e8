//! The cluster's credentials (`dpstat cluster init DIR`) and the mutual TLS they give: a CA of
//! its own, and a certificate and key for the scheduler, the executors and the client, each
//! signed by it. Every server of the cluster (the scheduler's gRPC port, each executor's Flight
//! port) accepts only a peer that presents a certificate of this CA, and every connection
//! checks that the server's is one too, so a process without a key of the cluster, or with a
//! certificate of another CA, gets no connection at all (DESIGN §7.8, PRIVACY §6).
//!
//! Every certificate names the same server identity, [`NAME`], whatever host it runs on: the
//! cluster is the set of holders of its CA's certificates, not a set of host names.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ballista_core::extension::EndpointOverrideFn;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig};

/// The server name every certificate of a cluster carries and every client checks.
pub const NAME: &str = "dpstat-cluster";

/// How long a connection may take to open, and then its TLS handshake: a port that is not a
/// dpstat cluster's (a silent listener, a server of another protocol) fails in seconds.
pub const CONNECT_WAIT: Duration = Duration::from_secs(5);

/// The roles a certificate is made for (its file names in the credentials folder).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Scheduler,
    Executor,
    Client,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Scheduler => "scheduler",
            Role::Executor => "executor",
            Role::Client => "client",
        }
    }
}

/// One role's credentials, read from the folder `init` made.
#[derive(Clone)]
pub struct Credentials {
    ca: Certificate,
    identity: Identity,
    /// This role's certificate (DER): how an executor knows the others ([`super::gate`]).
    certificate: Vec<u8>,
}

/// How a process of the cluster talks: mutual TLS with its credentials, or plain gRPC on
/// loopback (`--insecure-loopback`, `?insecure`), which anyone on the host can use.
#[derive(Clone)]
pub enum Security {
    Tls(Credentials),
    InsecureLoopback,
}

fn read(dir: &Path, file: &str) -> Result<String, String> {
    let path = dir.join(file);
    fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {}", path.display(), e))
}

impl Credentials {
    /// Reads `ca.crt`, `ROLE.crt` and `ROLE.key` from `dir`.
    pub fn load(dir: &Path, role: Role) -> Result<Credentials, String> {
        let ca = read(dir, "ca.crt")?;
        let cert = read(dir, &format!("{}.crt", role.name()))?;
        let key = read(dir, &format!("{}.key", role.name()))?;
        for (text, file) in [(&ca, "ca.crt".to_string()), (&cert, format!("{}.crt", role.name()))] {
            if !text.contains("-----BEGIN CERTIFICATE-----") {
                return Err(format!("{} is not a PEM certificate", dir.join(file).display()));
            }
        }
        if !key.contains("PRIVATE KEY-----") {
            return Err(format!(
                "{} is not a PEM private key",
                dir.join(format!("{}.key", role.name())).display()
            ));
        }
        let certificate = pem::parse(&cert)
            .map_err(|e| format!("{}: {e}", dir.join(format!("{}.crt", role.name())).display()))?
            .into_contents();
        Ok(Credentials {
            ca: Certificate::from_pem(ca),
            identity: Identity::from_pem(cert, key),
            certificate,
        })
    }

    /// This role's certificate, as a TLS peer shows it (DER).
    pub fn certificate(&self) -> &[u8] {
        &self.certificate
    }

    /// A server's TLS: its certificate, and a client certificate of the cluster's CA required.
    pub fn server(&self) -> ServerTlsConfig {
        ServerTlsConfig::new()
            .identity(self.identity.clone())
            .client_ca_root(self.ca.clone())
            .client_auth_optional(false)
            .timeout(CONNECT_WAIT)
    }

    /// A client's TLS: the server must hold a certificate of the cluster's CA naming [`NAME`];
    /// this process shows its own.
    pub fn client(&self) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(self.ca.clone())
            .identity(self.identity.clone())
            .domain_name(NAME)
            .timeout(CONNECT_WAIT)
    }
}

impl Security {
    /// What Ballista applies to every channel it opens (to the scheduler, to an executor's
    /// Flight port): TLS when the cluster has credentials, and the connect wait either way.
    pub fn endpoint_override(&self) -> EndpointOverrideFn {
        let tls = match self {
            Security::Tls(credentials) => Some(credentials.client()),
            Security::InsecureLoopback => None,
        };
        std::sync::Arc::new(move |endpoint: Endpoint| match &tls {
            Some(tls) => Ok(secure(&endpoint)?.tls_config(tls.clone())?),
            None => Ok(endpoint.connect_timeout(CONNECT_WAIT)),
        })
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Security::Tls(_))
    }
}

/// `endpoint` at its `https` address: Ballista names the scheduler `http://…` whatever its
/// configuration, and tonic speaks TLS only to an `https` address (to any other it would send
/// the request in the clear). The channel settings are Ballista's own (`create_grpc_client_endpoint`),
/// with the shorter connect wait.
fn secure(endpoint: &Endpoint) -> Result<Endpoint, Box<dyn std::error::Error + Send + Sync>> {
    let mut parts = endpoint.uri().clone().into_parts();
    parts.scheme = Some(tonic::codegen::http::uri::Scheme::HTTPS);
    let uri = tonic::codegen::http::Uri::from_parts(parts)?;
    Ok(Endpoint::from(uri)
        .connect_timeout(CONNECT_WAIT)
        .timeout(Duration::from_secs(20))
        .tcp_nodelay(true)
        .tcp_keepalive(Some(Duration::from_secs(3600)))
        .http2_keep_alive_interval(Duration::from_secs(300))
        .keep_alive_timeout(Duration::from_secs(20))
        .keep_alive_while_idle(true)
        .initial_connection_window_size(Some(64 << 20))
        .initial_stream_window_size(Some(16 << 20)))
}

/// Whether `host` (a name or an address) is this machine's loopback.
pub fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The files `init` writes, in order.
pub const FILES: [&str; 8] = [
    "ca.crt",
    "ca.key",
    "scheduler.crt",
    "scheduler.key",
    "executor.crt",
    "executor.key",
    "client.crt",
    "client.key",
];

/// Makes a new cluster's credentials in `dir` (created if missing; refused if it holds any of
/// them already, so that a running cluster's are never overwritten): a CA, and for each role a
/// key and a certificate signed by it. Keys are written readable by their owner only.
pub fn init(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let fail = |e: rcgen::Error| format!("cannot make the certificates: {e}");
    if let Some(there) = FILES.iter().map(|f| dir.join(f)).find(|p| p.exists()) {
        return Err(format!(
            "{} exists: make a new cluster's credentials in an empty folder (to rotate, see GUIDE.md's cluster section)",
            there.display()
        ));
    }
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {}", dir.display(), e))?;
    let ca_key = KeyPair::generate().map_err(fail)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.distinguished_name.push(DnType::CommonName, "dpstat cluster CA");
    let ca_cert = ca.self_signed(&ca_key).map_err(fail)?;
    let mut written = vec![
        write(dir, "ca.crt", &ca_cert.pem(), false)?,
        write(dir, "ca.key", &ca_key.serialize_pem(), true)?,
    ];
    let issuer = Issuer::new(ca, ca_key);
    for role in [Role::Scheduler, Role::Executor, Role::Client] {
        let key = KeyPair::generate().map_err(fail)?;
        let mut leaf = CertificateParams::new(vec![NAME.to_string()]).map_err(fail)?;
        leaf.distinguished_name.push(DnType::CommonName, format!("dpstat cluster {}", role.name()));
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        // Every member both serves and calls (an executor calls the scheduler and serves
        // shuffle data; the scheduler's certificate may be used as a client's by its tools).
        leaf.extended_key_usages =
            vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        leaf.is_ca = IsCa::ExplicitNoCa;
        let cert = leaf.signed_by(&key, &issuer).map_err(fail)?;
        written.push(write(dir, &format!("{}.crt", role.name()), &cert.pem(), false)?);
        written.push(write(dir, &format!("{}.key", role.name()), &key.serialize_pem(), true)?);
    }
    Ok(written)
}

fn write(dir: &Path, file: &str, text: &str, secret: bool) -> Result<PathBuf, String> {
    let path = dir.join(file);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if secret { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut out = options.open(&path).map_err(|e| format!("cannot create {}: {}", path.display(), e))?;
    out.write_all(text.as_bytes()).map_err(|e| format!("cannot write {}: {}", path.display(), e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_makes_every_role_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let written = init(dir.path()).unwrap();
        assert_eq!(written.len(), FILES.len());
        for role in [Role::Scheduler, Role::Executor, Role::Client] {
            Credentials::load(dir.path(), role).unwrap();
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.path().join("client.key")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let before = fs::read(dir.path().join("ca.key")).unwrap();
        assert!(init(dir.path()).unwrap_err().contains("exists"));
        assert_eq!(fs::read(dir.path().join("ca.key")).unwrap(), before);
    }

    #[test]
    fn only_loopback_is_loopback() {
        for host in ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LOCALHOST"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["10.0.0.1", "0.0.0.0", "example.org", "localhost.example.org", "::"] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
