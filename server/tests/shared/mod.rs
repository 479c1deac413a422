//! What the observability test binaries share.

use arbiter_proto::common::v1 as common;
use arbiter_proto::matchmaking::v1::{
    self as mm, join_response::Event, matchmaking_service_client::MatchmakingServiceClient,
};
use std::time::Duration;
use tonic::transport::Channel;

/// `player` joins the casual chess pool of `time_control` and waits on the join stream for
/// the match found (up to 20 s).
pub async fn matched(channel: Channel, player: &str, time_control: &str) -> mm::MatchFound {
    let mut client = MatchmakingServiceClient::new(channel);
    let request = mm::JoinRequest {
        player_id: player.into(),
        variant: common::Variant::Chess as i32,
        time_control: time_control.into(),
        rated: false,
        ..mm::JoinRequest::default()
    };
    let mut stream = client.join(request).await.unwrap().into_inner();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), stream.message())
            .await
            .expect("a match within 20 s")
            .unwrap()
            .expect("the stream stays open until the match");
        if let Some(Event::MatchFound(found)) = event.event {
            return found;
        }
    }
}
