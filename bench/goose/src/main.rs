//! The journey of bench/scenarios.py in goose: each user logs in once (`set_on_start`), keeping
//! the token from its JSON answer in its session data; then each iteration lists the items with
//! the token, takes the first item's id from that JSON, and adds it to the cart with the token.

use goose::goose::GooseResponse;
use goose::prelude::*;

#[derive(Clone)]
struct Session {
    auth: String,
}

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    GooseAttack::initialize()?
        .register_scenario(
            scenario!("journey")
                .register_transaction(transaction!(login).set_on_start())
                .register_transaction(transaction!(shop)),
        )
        .execute()
        .await?;
    Ok(())
}

/// JSON at `pointer` in a response's body.
async fn json_at(r: GooseResponse, pointer: &str) -> Option<serde_json::Value> {
    let text = r.response.ok()?.text().await.ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.pointer(pointer).cloned()
}

async fn login(user: &mut GooseUser) -> TransactionResult {
    let r = user.post("/login", "user=u").await?;
    let token = json_at(r, "/token").await;
    let token = token.as_ref().and_then(|t| t.as_str()).unwrap_or("");
    user.set_session_data(Session {
        auth: format!("Bearer {token}"),
    });
    Ok(())
}

async fn shop(user: &mut GooseUser) -> TransactionResult {
    let auth = user.get_session_data_unchecked::<Session>().auth.clone();
    let list = user
        .get_request_builder(&GooseMethod::Get, "/items")?
        .header("Authorization", &auth);
    let list = GooseRequest::builder()
        .set_request_builder(list)
        .name("/items")
        .build();
    let r = user.request(list).await?;
    let id = json_at(r, "/items/0/id").await.unwrap_or_default();
    let add = user
        .get_request_builder(&GooseMethod::Post, &format!("/cart/{id}"))?
        .header("Authorization", &auth);
    let request = GooseRequest::builder()
        .set_request_builder(add)
        .name("/cart/[id]")
        .expect_status_code(201)
        .build();
    user.request(request).await?;
    Ok(())
}
