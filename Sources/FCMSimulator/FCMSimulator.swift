// The FCM simulator.
