// Pure classification of FCM answers and the retry policy.
