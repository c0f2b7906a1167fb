package client

// AssistantsClient calls /assistants: the graphs a server serves and
// their configured variants. Its methods are listed in the package
// documentation (Areas) and come with the server's routes for this area.
type AssistantsClient struct{ c *Client }
