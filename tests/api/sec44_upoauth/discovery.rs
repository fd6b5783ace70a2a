//! Issue 44 item 6: where upstream OAuth discovery may send requests.
