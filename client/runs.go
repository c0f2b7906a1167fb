package client

// RunsClient calls runs on a thread (/threads/{id}/runs) and stateless
// runs (/runs). Its methods are listed in the package documentation
// (Areas) and come with the server's routes for this area.
type RunsClient struct{ c *Client }
