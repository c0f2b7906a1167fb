package client

// ThreadsClient calls /threads: conversations, their state and history.
// Its methods are listed in the package documentation (Areas) and come
// with the server's routes for this area.
type ThreadsClient struct{ c *Client }
