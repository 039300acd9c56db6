//! The TLS client settings an https:// run uses: trusted roots (the Mozilla set from
//! webpki-roots plus `--cacert`), session resumption (on, as browsers and curl do, unless
//! `--tls-full-handshake`), ALPN (http/1.1, h2 with `--http2`, h3 with `--http3`), client certificates
//! (`--cert/--key`), and `--insecure`'s verifier that accepts any
//! certificate (still checking the handshake signatures, so the session is real TLS).

use anyhow::{anyhow, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::path::Path;
use std::sync::Arc;

/// How an https:// run treats the server's certificate and sessions.
pub struct TlsOptions<'a> {
    pub cacert: Option<&'a Path>,
    pub insecure: bool,
    pub full_handshake: bool,
    /// HTTP/3: requests in 0-RTT where a resumed session allows it.
    pub early_data: bool,
    /// Pin TLS 1.2 or 1.3 (`None`: either).
    pub version: Option<crate::spec::TlsVersion>,
    /// Send and verify this name instead of the URL's host.
    pub sni: Option<&'a str>,
    /// A client certificate chain and its key (PEM files), for servers that ask for one.
    pub client_cert: Option<(&'a Path, &'a Path)>,
    /// Offer HTTP/2 (ALPN h2) instead of HTTP/1.1.
    pub http2: bool,
    /// QUIC's TLS: TLS 1.3 only, ALPN h3 only.
    pub http3: bool,
}

/// The engine's TLS client for `host` (the URL's host: SNI and the name verified).
pub fn client(host: &str, opts: &TlsOptions) -> Result<pelt_engine::TlsClient> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = match opts.version {
        _ if opts.http3 => &[&rustls::version::TLS13],
        None => rustls::DEFAULT_VERSIONS,
        Some(crate::spec::TlsVersion::V1_2) => &[&rustls::version::TLS12],
        Some(crate::spec::TlsVersion::V1_3) => &[&rustls::version::TLS13],
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| anyhow!("TLS: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = if opts.insecure {
        Arc::new(AcceptAnyCertificate(provider.clone()))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = opts.cacert {
            let pem = std::fs::read(path)
                .map_err(|e| anyhow!("cannot read --cacert {}: {e}", path.display()))?;
            let mut added = 0;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| anyhow!("--cacert {}: {e}", path.display()))?;
                roots
                    .add(cert)
                    .map_err(|e| anyhow!("--cacert {}: {e}", path.display()))?;
                added += 1;
            }
            if added == 0 {
                return Err(anyhow!(
                    "--cacert {}: no PEM certificate found in it",
                    path.display()
                ));
            }
        }
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| anyhow!("TLS: {e}"))?
    };
    // QUIC's TLS tells no handshake kind: the check counts what it checks (a resumed
    // handshake checks no certificate).
    let verifier = if opts.http3 {
        Arc::new(pelt_engine::QuicVerifier(verifier))
    } else {
        verifier
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match opts.client_cert {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let (chain, private) = client_identity(cert, key)?;
            builder
                .with_client_auth_cert(chain, private)
                .map_err(|e| anyhow!("--cert {} / --key {}: {e}", cert.display(), key.display()))?
        }
    };
    // With --http2 both are offered, so a server without h2 is told apart (pelt then says so).
    config.alpn_protocols = if opts.http3 {
        vec![b"h3".to_vec()]
    } else if opts.http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    if opts.full_handshake {
        config.resumption = rustls::client::Resumption::disabled();
    }
    config.enable_early_data = opts.http3 && opts.early_data;
    // IP literals in URLs come bracketed for IPv6; the name to verify is the bare address.
    let host = opts.sni.unwrap_or(host);
    let name = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let server_name =
        ServerName::try_from(name).map_err(|e| anyhow!("invalid TLS server name '{host}': {e}"))?;
    Ok(pelt_engine::TlsClient {
        config: Arc::new(config),
        server_name,
    })
}

/// `--insecure`: any certificate for any name is accepted; signatures are still checked.
/// Reads a client certificate chain and its private key from PEM files.
fn client_identity(
    cert: &Path,
    key: &Path,
) -> Result<(
    Vec<CertificateDer<'static>>,
    rustls::pki_types::PrivateKeyDer<'static>,
)> {
    use rustls::pki_types::PrivateKeyDer;
    let pem =
        std::fs::read(cert).map_err(|e| anyhow!("cannot read --cert {}: {e}", cert.display()))?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("--cert {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(anyhow!(
            "--cert {}: no PEM certificate found in it",
            cert.display()
        ));
    }
    let pem =
        std::fs::read(key).map_err(|e| anyhow!("cannot read --key {}: {e}", key.display()))?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        anyhow!(
            "--key {}: no PEM private key found in it ({e})",
            key.display()
        )
    })?;
    Ok((chain, key))
}

/// A verifier that accepts any certificate for any name, still checking the handshake's
/// signatures (`--insecure`, and the fleet's channel, whose token proofs authenticate).
pub(crate) fn any_certificate(provider: Arc<CryptoProvider>) -> Arc<dyn ServerCertVerifier> {
    Arc::new(AcceptAnyCertificate(provider))
}

#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
