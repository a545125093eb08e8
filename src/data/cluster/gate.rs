//! What an executor of dpstat's agrees to serve on its Flight port. A stage's output is fetched
//! by the executors of the next stage and, for a job's last stage, by the client; Ballista's
//! own service hands any stage's output to any holder of a certificate of the cluster's CA who
//! names its job. Between the two stages of a person-level fold that output is the persons'
//! rows (shuffled by bucket for the `Bounded` folds that choose rows only once their bucket's
//! rows all met, or such a fold's state), so the holder of the client's certificate who ran
//! such a job could have read them back.
//!
//! [`Gate`] serves what a stage hands to the next stage ([`Output::States`]) only to a peer
//! that shows the executors' own certificate, and to any other peer only a fold's results
//! ([`Output::Results`]) of a stage this executor ran (and still remembers): the guard records
//! which is which as it accepts each stage. Without TLS (`--insecure-loopback`) no peer shows a
//! certificate and every fetch is served, as anyone on the host may use such a cluster.

use std::sync::Arc;

use arrow_flight::flight_service_server::FlightService;
use arrow_flight::{
    Action, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo, HandshakeRequest, PollInfo,
    SchemaResult, Ticket,
};
use ballista_core::serde::decode_protobuf;
use ballista_core::serde::scheduler::Action as BallistaAction;
use ballista_executor::flight_service::BallistaFlightService;
use tonic::codegen::async_trait;
use tonic::{Request, Response, Status, Streaming};

use super::guard::{Output, Stages};

/// Ballista's Flight service behind the check.
pub struct Gate {
    inner: BallistaFlightService,
    stages: Arc<Stages>,
    /// The executors' certificate (DER), or None without TLS.
    executor: Option<Vec<u8>>,
}

/// Who asks for a fetch.
#[derive(Debug, PartialEq, Eq)]
pub enum Peer<'a> {
    /// No TLS on this port: nobody shows a certificate.
    Unknown,
    /// The certificate it showed (DER).
    Showed(&'a [u8]),
}

impl Gate {
    pub fn new(inner: BallistaFlightService, stages: Arc<Stages>, executor: Option<Vec<u8>>) -> Gate {
        Gate { inner, stages, executor }
    }

    /// Why `peer` may not fetch the output of `stage` of `job`, or None when it may.
    pub fn refusal(&self, peer: Peer, job: &str, stage: usize) -> Option<&'static str> {
        let Some(executors) = &self.executor else { return None };
        if matches!(peer, Peer::Showed(der) if der == executors.as_slice()) {
            return None;
        }
        match self.stages.output(job, stage) {
            Some(Output::Results) => None,
            Some(Output::States) => Some("a stage's states are served to the cluster's executors only"),
            None => Some("no stage of this executor's recent jobs by that name"),
        }
    }

    /// Checks a fetch (its ticket's or action's bytes) by `request`'s peer.
    fn check<T>(&self, request: &Request<T>, body: &[u8]) -> Result<(), Status> {
        // What Ballista's service does not take for a fetch it refuses itself.
        let Ok(BallistaAction::FetchPartition { job_id, stage_id, .. }) = decode_protobuf(body) else {
            return Ok(());
        };
        let certs = request.peer_certs();
        let peer = match certs.as_deref().and_then(|c| c.first()) {
            Some(der) => Peer::Showed(der.as_ref()),
            None => Peer::Unknown,
        };
        match self.refusal(peer, job_id.as_str(), stage_id) {
            None => Ok(()),
            Some(why) => {
                log::warn!("refused a fetch of job {job_id} stage {stage_id}: {why}");
                Err(Status::permission_denied(format!("dpstat executor: {why}")))
            }
        }
    }
}

#[async_trait]
impl FlightService for Gate {
    type HandshakeStream = <BallistaFlightService as FlightService>::HandshakeStream;
    type ListFlightsStream = <BallistaFlightService as FlightService>::ListFlightsStream;
    type DoGetStream = <BallistaFlightService as FlightService>::DoGetStream;
    type DoPutStream = <BallistaFlightService as FlightService>::DoPutStream;
    type DoExchangeStream = <BallistaFlightService as FlightService>::DoExchangeStream;
    type DoActionStream = <BallistaFlightService as FlightService>::DoActionStream;
    type ListActionsStream = <BallistaFlightService as FlightService>::ListActionsStream;

    async fn do_get(&self, request: Request<Ticket>) -> Result<Response<Self::DoGetStream>, Status> {
        self.check(&request, &request.get_ref().ticket)?;
        self.inner.do_get(request).await
    }

    async fn do_action(&self, request: Request<Action>) -> Result<Response<Self::DoActionStream>, Status> {
        self.check(&request, &request.get_ref().body)?;
        self.inner.do_action(request).await
    }

    async fn handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        self.inner.handshake(request).await
    }

    async fn list_flights(
        &self,
        request: Request<Criteria>,
    ) -> Result<Response<Self::ListFlightsStream>, Status> {
        self.inner.list_flights(request).await
    }

    async fn get_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.inner.get_flight_info(request).await
    }

    async fn poll_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        self.inner.poll_flight_info(request).await
    }

    async fn get_schema(&self, request: Request<FlightDescriptor>) -> Result<Response<SchemaResult>, Status> {
        self.inner.get_schema(request).await
    }

    async fn do_put(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoPutStream>, Status> {
        self.inner.do_put(request).await
    }

    async fn do_exchange(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoExchangeStream>, Status> {
        self.inner.do_exchange(request).await
    }

    async fn list_actions(
        &self,
        request: Request<Empty>,
    ) -> Result<Response<Self::ListActionsStream>, Status> {
        self.inner.list_actions(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(executor: Option<&[u8]>) -> Gate {
        let stages = Arc::new(Stages::default());
        stages.record("job1", 1, Output::States);
        stages.record("job1", 2, Output::Results);
        Gate::new(BallistaFlightService::new(String::new()), stages, executor.map(<[u8]>::to_vec))
    }

    #[test]
    fn states_go_to_executors_and_results_to_anyone_of_the_cluster() {
        let gate = gate(Some(b"executors"));
        let executor = Peer::Showed(b"executors");
        let client = Peer::Showed(b"client");
        assert_eq!(gate.refusal(Peer::Showed(b"executors"), "job1", 1), None);
        assert_eq!(gate.refusal(Peer::Showed(b"executors"), "job1", 2), None);
        assert!(gate.refusal(client, "job1", 1).is_some_and(|why| why.contains("executors only")));
        assert_eq!(gate.refusal(Peer::Showed(b"client"), "job1", 2), None);
        // A stage this executor never ran (or forgot): executors only.
        assert!(gate.refusal(Peer::Showed(b"client"), "job2", 1).is_some());
        assert_eq!(gate.refusal(executor, "job2", 1), None);
        // A certificate that starts as the executors' is not theirs.
        assert!(gate.refusal(Peer::Showed(b"executorsX"), "job1", 1).is_some());
        assert!(gate.refusal(Peer::Unknown, "job1", 1).is_some());
    }

    #[test]
    fn without_tls_everything_is_served() {
        let gate = gate(None);
        assert_eq!(gate.refusal(Peer::Unknown, "job1", 1), None);
        assert_eq!(gate.refusal(Peer::Unknown, "job9", 9), None);
    }
}
